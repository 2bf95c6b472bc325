#!/usr/bin/env bash
# collectives: the pure-Go kernels (noasm), the race detector over the algorithms, the suite
# in real processes over comm's TCP and shared-memory transports and over fake hosts, commbench
# end to end under gorun over TCP processes (table and --plot PNG), and a smoke run of the
# Open MPI side-by-side script (its figures are not recorded: --quick --no-update).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- go test -tags noasm ./collectives/..."
go test -count=1 -tags noasm ./collectives/...
echo "-- go test -race -short ./collectives"
go test -count=1 -race -short ./collectives

echo "-- the suite in real processes: every rank count 1-8 over shm and tcp, software verbs (RC, UC) and fake hosts (~2 min)"
GORUN_COLL_PROC_MATRIX=full go test -count=1 -v -run TestSuiteInProcesses ./collectives

echo "-- gorun -n 4 commbench allreduce --plot"
go build -o "$work/gorun" ./cmd/gorun
go build -o "$work/commbench" ./cmd/commbench
(cd "$work" && ./gorun -n 4 ./commbench allreduce -M 1M -i 50 -x 5 -I 10 -X 2 --plot allreduce.png >table.txt)
cat "$work/table.txt"
grep -q '^# gorun commbench Allreduce Latency Test' "$work/table.txt"
rows=$(grep -c '^[0-9]' "$work/table.txt")
[ "$rows" -eq 19 ] || { echo "want 19 sizes (4 B..1 MiB), got $rows" >&2; exit 1; }
python3 - "$work/allreduce.png" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert w >= 1000 and h >= 400 and len(b) > 20000, (w, h, len(b))
print(f"plot ok: {w}x{h}, {len(b)} bytes")
PY
(cd "$work" && ./gorun -n 3 ./commbench latency -M 64K -i 50 -x 5 --json >lat.json)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["test"]=="latency" and len(d["rows"])==17, d' "$work/lat.json"

echo "-- bench/collectives/run.sh --quick (smoke; needs Open MPI)"
apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null
bench/collectives/run.sh --rounds 1 --quick --no-update >"$work/bench.txt"
grep -q '^| tcp | allreduce | 4 | 64 MiB |' "$work/bench.txt"
