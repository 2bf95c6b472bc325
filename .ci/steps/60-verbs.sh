#!/usr/bin/env bash
# verbs: comm's RDMA transport. Builds and vets the libibverbs implementation (-tags verbs)
# against Debian's rdma-core; runs the verbs tests (software device softibv, RC and UC queue
# pairs, loss, vanished link, killed peer; the hardware tests skip without a device, saying
# why), the collectives over softibv in both modes, and a gorun job over it.
# About 5-8 minutes on 2 quiet cores, most of it the two collectives runs (measured here only
# on a loaded shared machine: 3-5 minutes each).
set -euo pipefail
cd "$(dirname "$0")/../.."
apt-get install -y --no-install-recommends libibverbs-dev ibverbs-utils >/dev/null

echo "-- go vet / go build -tags verbs ./..."
go vet -tags verbs ./...
go build -tags verbs ./...

echo "-- what libibverbs sees here (none expected on CI machines)"
ibv_devices || true
go run -tags verbs ./cmd/gorun --list-devices

echo "-- verbs tests, cgo build (comm check suite as processes over softibv RC/UC, faults, devices)"
go test -count=1 -tags verbs -v -run 'Verbs|Soft|Hardware|PairGID|GIDKinds|Describe|ListDevices' ./comm/... ./launcher/ 2>&1 | grep -E '^(=== RUN|--- |\s+--- |ok|FAIL|PASS)|SKIP|skip' || true
go test -count=1 -tags verbs -run 'Verbs|Soft|Hardware|PairGID|GIDKinds|Describe|ListDevices' ./comm/... ./launcher/
go test -count=1 -race -run 'VerbsProcesses|VerbsLoss' ./comm/
go test -count=1 -race ./comm/internal/ibv

echo "-- collectives over softibv (comm.Run with GORUN_RUN_TRANSPORT=verbs), RC and UC"
for qp in rc uc; do
	GORUN_RUN_TRANSPORT=verbs GORUN_RDMA_DEVICE=softibv GORUN_VERBS_QP=$qp go test -count=1 -short ./collectives
done

echo "-- gorun -n 4 --transport verbs: commbench allreduce over softibv processes"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -tags verbs -o "$work/gorun" ./cmd/gorun
go build -o "$work/commbench" ./cmd/commbench
(cd "$work" && GORUN_SOFTIBV_NO_RC=1 ./gorun -n 4 --transport verbs --rdma-device softibv ./commbench allreduce -M 1M -i 20 -x 2 >table.txt)
grep -c '^[0-9]' "$work/table.txt" | grep -qx 19
ls /dev/shm | grep -q '^gorun-softibv-' && { echo "softibv ring files left behind" >&2; exit 1; } || true
