#!/usr/bin/env bash
# topology, rma and the SPMD examples: the race detector over the topology and window suites,
# both suites in real processes at every rank count 1-8 over shm and tcp and over fake hosts
# (rank reordering; windows mixing shared segments with messages),
# every example as processes under gorun at 1, 2, 3 and 4 ranks over both shm and tcp, and a
# smoke run of the Jacobi side-by-side script with Open MPI.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "-- go test -race -short ./topology ./rma"
go test -count=1 -race -short ./topology ./rma
echo "-- the topology suite in processes: 1-8 ranks over shm and tcp, fake hosts"
GORUN_TOPO_PROC_MATRIX=full go test -count=1 -v -run TestSuiteInProcesses ./topology
echo "-- the window suite in processes: 1-8 ranks over shm and tcp, fake hosts"
GORUN_RMA_PROC_MATRIX=full go test -count=1 -v -run TestSuiteInProcesses ./rma
leftover=$(find "${TMPDIR:-/tmp}" /dev/shm -maxdepth 1 -name 'gorun-*rma-*' 2>/dev/null || true)
[ -z "$leftover" ] || { echo "window segments left behind: $leftover" >&2; exit 1; }
echo "-- the examples at 1-4 ranks over shm and tcp"
GORUN_EXAMPLES_MATRIX=full go test -count=1 -v -run TestProgram ./examples/...

echo "-- bench/spmd/run.sh --quick (smoke; needs Open MPI; figures not recorded)"
apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null
out=$(bench/spmd/run.sh --quick --rounds 1)
echo "$out"
rows=$(grep -cE '^\| (64|512) x (64|512) \| [12] \| (alltoall|sendrecv) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' <<<"$out")
[ "$rows" -eq 8 ] || { echo "want 8 rows of figures, got $rows" >&2; exit 1; }
