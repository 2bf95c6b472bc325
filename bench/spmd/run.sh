#!/usr/bin/env bash
# Side-by-side: examples/jacobi under gorun and the same solver in C with Open MPI
# (bench/spmd/jacobi.c, Debian's openmpi-bin), at 1 and 2 ranks on one host (ours: shared
# memory, the default there; Open MPI: its default, vader), each with the halo exchanged by
# the neighbour collective (topology.NeighborAlltoallv / MPI_Neighbor_alltoallv) and by hand
# (Irecv/Isend). A fixed number of iterations (--tol 0); each figure is the median of --rounds
# runs, the two programs alternating. Prints a Markdown table of microseconds per iteration.
#
# usage: bench/spmd/run.sh [--rounds N] [--quick]
# needs: go, mpicc and mpirun (apt-get install openmpi-bin libopenmpi-dev)
set -euo pipefail

rounds=5 quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--quick) quick=1; shift ;;
	*) echo "usage: $0 [--rounds N] [--quick]" >&2; exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v mpicc >/dev/null || { echo "mpicc not found: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
mpicc -O2 -o "$tmp/jacobi-c" "$root/bench/spmd/jacobi.c" -lm
(cd "$root" && go build -o "$tmp/gorun" ./cmd/gorun && go build -o "$tmp/jacobi" ./examples/jacobi)
cd "$tmp"

per_iter() { sed -n 's/.*, \([0-9.]*\) us per iteration$/\1/p'; }
# median of the values on stdin (the lower middle one for an even count)
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# grid iterations
cases=("64 20000" "512 400")
[ "$quick" = 1 ] && cases=("64 200" "512 10")
echo "| grid | ranks | halo | gorun (us/iter) | Open MPI (us/iter) | gorun / Open MPI |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
	read -r n iters <<<"$c"
	for np in 1 2; do
		for halo in alltoall sendrecv; do
			ours=() theirs=()
			for _ in $(seq "$rounds"); do
				ours+=("$(./gorun -n "$np" ./jacobi --n "$n" --tol 0 --max-iter "$iters" --halo "$halo" | per_iter)")
				theirs+=("$(mpirun --allow-run-as-root -np "$np" ./jacobi-c --n "$n" --tol 0 --max-iter "$iters" --halo "$halo" | per_iter)")
			done
			o=$(printf '%s\n' "${ours[@]}" | median)
			t=$(printf '%s\n' "${theirs[@]}" | median)
			printf '| %d x %d | %d | %s | %s | %s | %.2f |\n' "$n" "$n" "$np" "$halo" "$o" "$t" "$(echo "$o / $t" | bc -l)"
		done
	done
done
