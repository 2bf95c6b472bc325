#!/usr/bin/env bash
# linalg: the pure-Go kernels (noasm tag) and the arm64 NEON micro-kernel,
# which runs here under qemu-user emulation. Assumes `apt-get update` was done.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Pure-Go build: the fallback kernel and the test oracle must pass on their own.
go test -count=1 -tags noasm ./linalg/...

# arm64: cross-compile the test binary and run it under qemu-aarch64.
if ! command -v qemu-aarch64-static >/dev/null; then
	apt-get install -y --no-install-recommends qemu-user-static
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOARCH=arm64 go vet ./linalg/...
GOARCH=arm64 go test -c -o "$tmp/linalg-arm64.test" ./linalg
# -test.short keeps the emulated run to about half a minute.
(cd linalg && qemu-aarch64-static "$tmp/linalg-arm64.test" -test.short -test.count=1)
GOARCH=arm64 go test -c -tags noasm -o "$tmp/linalg-arm64-noasm.test" ./linalg
(cd linalg && qemu-aarch64-static "$tmp/linalg-arm64-noasm.test" -test.short -test.count=1 -test.run 'Kernel|Dgemm')
