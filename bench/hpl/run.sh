#!/usr/bin/env bash
# Side-by-side HPL: gorun's hpl against netlib HPL 2.3's xhpl, same HPL.dat (N, NB, grid,
# WR11C2R4, mix swap at 64), one BLAS thread per rank, alternating runs so that drift on a
# shared machine hits both. Prints one markdown row per (grid, N) with both Gflops and the
# ratio, plus the residuals.
#
#   bench/hpl/run.sh /work/peers/hpl/bin/gorun/xhpl [reps] [N list] [grid list] [NB]
#   bench/hpl/run.sh ./xhpl 2 "8000 12000" "1x1 1x2 2x2" 128
#
# netlib runs under Open MPI (shared memory, --oversubscribe when P*Q exceeds the cores) with
# `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` (OpenBLAS's AVX-512 kernel) and
# OPENBLAS_NUM_THREADS=1; ours runs under `gorun -n P*Q` with one Dgemm goroutine per rank.
set -euo pipefail

xhpl=${1:?usage: run.sh PATH/TO/xhpl [reps] [Ns] [grids] [NB]}
reps=${2:-1}
ns=${3:-"8000 12000"}
grids=${4:-"1x1 1x2"}
nb=${5:-128}
xhpl=$(realpath "$xhpl")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/gorun" "$root/cmd/gorun"
go build -o "$work/hpl" "$root/cmd/hpl"
cores=$(nproc)

dat() { # N NB P Q
	cat <<DAT
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$1           Ns
1            # of NBs
$2           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$3           Ps
$4           Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
DAT
}

gflops() { awk '/^WR/ {print $7}' "$1"; }
resid() { awk '/PASSED|FAILED/ {print $2, $4}' "$1"; }

echo "| grid | N | NB | ours Gflops | netlib Gflops | ours/netlib | residual ours / netlib |"
echo "|---|---|---|---|---|---|---|"
for grid in $grids; do
	P=${grid%x*} Q=${grid#*x}
	np=$((P * Q))
	over=""
	[ "$np" -gt "$cores" ] && over="--oversubscribe"
	for n in $ns; do
		d="$work/$grid-$n"
		mkdir -p "$d"
		dat "$n" "$nb" "$P" "$Q" >"$d/HPL.dat"
		best_o=0 best_n=0
		for r in $(seq "$reps"); do
			(cd "$d" && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \
				mpirun --allow-run-as-root --mca pml ob1 --mca btl self,vader $over -np "$np" "$xhpl" >"$d/netlib.$r.out" 2>&1)
			(cd "$d" && "$work/gorun" -n "$np" "$work/hpl" --dat HPL.dat >"$d/ours.$r.out" 2>&1)
			o=$(gflops "$d/ours.$r.out") t=$(gflops "$d/netlib.$r.out")
			echo "  run $r $grid N=$n: ours $o, netlib $t" >&2
			best_o=$(awk -v a="$best_o" -v b="$o" 'BEGIN{print (b+0 > a+0) ? b : a}')
			best_n=$(awk -v a="$best_n" -v b="$t" 'BEGIN{print (b+0 > a+0) ? b : a}')
		done
		ratio=$(awk -v a="$best_o" -v b="$best_n" 'BEGIN{ if (b+0 > 0) printf "%.2f", a/b; else print "n/a" }')
		label=$grid
		[ -n "$over" ] && label="$grid (oversubscribed on $cores cores)"
		echo "| $label | $n | $nb | $best_o | $best_n | $ratio | $(resid "$d/ours.1.out" | cut -d' ' -f1) / $(resid "$d/netlib.1.out" | cut -d' ' -f1) |"
	done
done
