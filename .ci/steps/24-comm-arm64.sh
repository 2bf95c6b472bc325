#!/usr/bin/env bash
# comm's layers and the collectives on arm64, under qemu-user: goroutine ranks (the in-process
# transport, the engine and its requests) and the transports' own tests. qemu on an x86 host
# lets a load pass an earlier atomic store, which ARM forbids (STLR then LDAR) and x86 allows,
# so the wake-up handshakes meet a weaker order here than on either real machine:
# core's TestCompleteWakesWaiter caught a lost wake-up this way. The tests that start
# processes re-execute the test binary and run only natively (go test ./...).
# Assumes `apt-get update` was done.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v qemu-aarch64-static >/dev/null; then
	apt-get install -y --no-install-recommends qemu-user-static
fi
GOARCH=arm64 go test -count=1 -short -exec qemu-aarch64-static ./comm/internal/... ./collectives/...
