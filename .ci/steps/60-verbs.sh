#!/usr/bin/env bash
# verbs: comm's RDMA transport. Builds and vets the libibverbs implementation (-tags verbs)
# against Debian's rdma-core; runs the verbs tests (software device softibv, RC and UC queue
# pairs, loss, vanished link, killed peer; the hardware tests skip without a device, saying
# why), the same under the race detector, and a gorun job over it.
# About 1 minute in this session's CI run (quiet machine, packages installed); 13 minutes wall on
# a heavily loaded shared machine when the step still ran the collectives over softibv.
set -euo pipefail
cd "$(dirname "$0")/../.."
apt-get install -y --no-install-recommends libibverbs-dev ibverbs-utils >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- go vet / go build -tags verbs ./..."
go vet -tags verbs ./...
go build -tags verbs ./...

echo "-- what libibverbs sees here (none expected on CI machines)"
ibv_devices || true
go run -tags verbs ./cmd/gorun --list-devices

echo "-- verbs tests, cgo build (comm check suite as processes over softibv RC/UC, faults, devices)"
tests='Verbs|Soft|Hardware|PairGID|GIDKinds|Describe|ListDevices|DeviceMatrix|ForcedGID'
if ! go test -count=1 -tags verbs -v -run "$tests" ./comm/... ./launcher/ >"$work/tests.log" 2>&1; then
	cat "$work/tests.log"
	exit 1
fi
grep -E '^(--- |    --- )|^ok|no RDMA device|without libibverbs' "$work/tests.log" || true
go test -count=1 -race -run 'VerbsProcesses|VerbsLoss|VerbsMesh' ./comm/
go test -count=1 -race ./comm/internal/ibv

# The collectives over softibv run as real processes in 25-collectives.sh (RC and UC, n=2,3,5,8).
# The same suite as goroutine ranks of one process (GORUN_RUN_TRANSPORT=verbs) passes but peaks
# at ~23 GiB of resident memory and was
# OOM-killed on a 24 GiB machine, so CI does not run it; the cause is not yet found.

echo "-- gorun -n 4 --transport verbs: commbench allreduce over softibv processes (UC, as on Apple)"
go build -tags verbs -o "$work/gorun" ./cmd/gorun
go build -o "$work/commbench" ./cmd/commbench
(cd "$work" && GORUN_SOFTIBV_NO_RC=1 ./gorun -n 4 --transport verbs --rdma-device softibv ./commbench allreduce -M 1M -i 20 -x 2 >table.txt)
cat "$work/table.txt"
rows=$(grep -c '^[0-9]' "$work/table.txt")
[ "$rows" -eq 19 ] || { echo "want 19 sizes (4 B..1 MiB), got $rows" >&2; exit 1; }
if ls /dev/shm | grep -q '^gorun-softibv-'; then
	echo "softibv ring files left behind:" >&2
	ls /dev/shm | grep '^gorun-softibv-' >&2
	exit 1
fi
