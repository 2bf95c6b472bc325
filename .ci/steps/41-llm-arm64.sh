#!/usr/bin/env bash
# llm/quant on arm64 under qemu-user, once per NEON path: QEMU_CPU=max emulates the ARMv8.2
# dot-product extension (the SDOT kernels run, and the tests also force the baseline path),
# cortex-a57 is ARMv8.0 without it (only the baseline NEON path). Each run checks which path
# the run-time detection chose, so a detection that silently fell back would fail here.
# Assumes `apt-get update` was done.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v qemu-aarch64-static >/dev/null; then
	apt-get install -y --no-install-recommends qemu-user-static
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOARCH=arm64 go vet ./llm/quant
GOARCH=arm64 go test -c -o "$tmp/quant-arm64.test" ./llm/quant
for cpu in max:neon+dotprod cortex-a57:neon; do
	name=${cpu%%:*} want=${cpu#*:}
	echo "== llm/quant arm64, QEMU_CPU=$name"
	out=$(cd llm/quant && QEMU_CPU=$name qemu-aarch64-static "$tmp/quant-arm64.test" -test.count=1 -test.v 2>&1) || {
		echo "$out" | tail -40 >&2
		exit 1
	}
	echo "$out" | grep -E '^(--- FAIL|ok|PASS|FAIL)' | tail -3
	if ! echo "$out" | grep -q "kernel: $want\$"; then
		echo "41-llm-arm64: QEMU_CPU=$name: expected kernel $want, the tests report: $(echo "$out" | grep -m1 'kernel: ')" >&2
		exit 1
	fi
done
