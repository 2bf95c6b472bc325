#!/usr/bin/env bash
# Side-by-side HPL: gorun's hpl against netlib HPL 2.3's xhpl, same HPL.dat (N, NB, grid,
# WR11C2R4, mix swap at 64), one BLAS thread per rank. On a shared machine load drifts, so the
# runs are interleaved: for each N and repetition, every grid runs netlib then ours (the order
# flips every other repetition), and each pair gives a ratio. Prints one markdown row per
# (grid, N): the best Gflops of each side, the ratio of the bests, the median of the pair
# ratios, the residuals, and the load average over the pairs; then each side's best 1xQ over
# its 1x1 (scaling) when 1x1 is among the grids.
#
#   bench/hpl/run.sh /work/peers/hpl/bin/gorun/xhpl [reps] [N list] [grid list] [NB]
#   bench/hpl/run.sh ./xhpl 3 "8000 12000" "1x1 1x2" 192
#   bench/hpl/run.sh ./xhpl 1 "8000 12000" "2x2" 192    # 4 ranks: oversubscribed on 2 cores
#
# netlib runs under Open MPI (shared memory, --oversubscribe when P*Q exceeds the cores) with
# `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` (OpenBLAS's AVX-512 kernel) and
# OPENBLAS_NUM_THREADS=1; ours runs under `gorun -n P*Q` with one Dgemm goroutine per rank.
# Per-run figures go to stderr.
#
# Cores of a VM need not be equally fast (another tenant on a sibling thread, clocks): a 1xQ
# grid splits the work evenly, so it runs at its slowest core's pace, while a 1x1 run's best
# may come from the fastest. Before each repetition the script times one Dgemm of HPL's
# update shape (m=n=2048, k=192) pinned to each core with taskset, and prints the spread.
set -euo pipefail

xhpl=${1:?usage: run.sh PATH/TO/xhpl [reps] [Ns] [grids] [NB]}
reps=${2:-1}
ns=${3:-"8000 12000"}
grids=${4:-"1x1 1x2"}
nb=${5:-192}
xhpl=$(realpath "$xhpl")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/gorun" "$root/cmd/gorun"
go build -o "$work/hpl" "$root/cmd/hpl"
(cd "$root" && go test -c -o "$work/linalg.test" ./linalg)
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

gflops() { awk '/^WR/ {print $7+0}' "$1"; }
resid() { awk '/PASSED|FAILED/ {print $2}' "$1" | head -n 1; }
load() { cut -d' ' -f1 /proc/loadavg; }
best() { sort -g | tail -n 1; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f\n", a / b; else print "n/a" }'; }

netlib_run() { # dir np over rep
	(cd "$1" && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \
		mpirun --allow-run-as-root --mca pml ob1 --mca btl self,vader $3 -np "$2" "$xhpl" >"$1/netlib.$4.out" 2>&1)
}
ours_run() { # dir np rep
	(cd "$1" && "$work/gorun" -n "$2" "$work/hpl" --dat HPL.dat >"$1/ours.$3.out" 2>&1)
}

core_probe() { # one line: GF/s of the update Dgemm on each core
	local c out
	for c in $(seq 0 $((cores - 1))); do
		out=$(taskset -c "$c" "$work/linalg.test" -test.run '^$' -test.bench 'DgemmUpdate/m=n=2048/k=192/threads=1$' -test.benchtime 30x 2>/dev/null |
			awk '/GFLOP\/s/ {for (i = 1; i < NF; i++) if ($(i + 1) == "GFLOP/s") print $i}')
		printf 'cpu%d %s ' "$c" "${out:-n/a}"
		echo "${out:-0}" >>"$work/core$c.gf"
	done
	echo
}

for n in $ns; do
	for r in $(seq "$reps"); do
		echo "  $(date -u +%H:%M:%S) update Dgemm per core (GF/s): $(core_probe)" >&2
		for grid in $grids; do
			P=${grid%x*} Q=${grid#*x}
			np=$((P * Q))
			over=""
			[ "$np" -gt "$cores" ] && over="--oversubscribe"
			d="$work/$grid-$n"
			mkdir -p "$d"
			[ -f "$d/HPL.dat" ] || dat "$n" "$nb" "$P" "$Q" >"$d/HPL.dat"
			l0=$(load)
			if [ $((r % 2)) = 1 ]; then
				netlib_run "$d" "$np" "$over" "$r"
				ours_run "$d" "$np" "$r"
			else
				ours_run "$d" "$np" "$r"
				netlib_run "$d" "$np" "$over" "$r"
			fi
			o=$(gflops "$d/ours.$r.out") t=$(gflops "$d/netlib.$r.out")
			echo "$o" >>"$d/ours.gf"
			echo "$t" >>"$d/netlib.gf"
			ratio "$o" "$t" >>"$d/pair.ratio"
			echo "$l0 $(load)" | tr ' ' '\n' >>"$d/load"
			echo "  $(date -u +%H:%M:%S) rep $r $grid N=$n: ours $o, netlib $t, ratio $(ratio "$o" "$t"), load $l0 -> $(load)" >&2
		done
	done
done

echo "| grid | N | NB | ours Gflops (best) | netlib Gflops (best) | ours/netlib (bests) | ours/netlib (median of $reps pairs) | residual ours / netlib | load avg |"
echo "|---|---|---|---|---|---|---|---|---|"
for grid in $grids; do
	P=${grid%x*} Q=${grid#*x}
	label=$grid
	[ $((P * Q)) -gt "$cores" ] && label="$grid (oversubscribed: $((P * Q)) ranks on $cores cores)"
	for n in $ns; do
		d="$work/$grid-$n"
		bo=$(best <"$d/ours.gf") bt=$(best <"$d/netlib.gf")
		echo "| $label | $n | $nb | $bo | $bt | $(ratio "$bo" "$bt") | $(median <"$d/pair.ratio") | $(resid "$d/ours.1.out") / $(resid "$d/netlib.1.out") | $(sort -g "$d/load" | head -n 1)-$(sort -g "$d/load" | tail -n 1) |"
	done
done
spread=""
for c in $(seq 0 $((cores - 1))); do
	spread+="cpu$c $(sort -g "$work/core$c.gf" | head -n 1)-$(sort -g "$work/core$c.gf" | tail -n 1) "
done
echo "update Dgemm per core over the repetitions (GF/s, min-max): $spread"
case " $grids " in *" 1x1 "*) ;; *) exit 0 ;; esac
for grid in $grids; do
	[ "$grid" != 1x1 ] && [ "${grid%x*}" = 1 ] || continue
	for n in $ns; do
		o1=$(best <"$work/1x1-$n/ours.gf") oq=$(best <"$work/$grid-$n/ours.gf")
		t1=$(best <"$work/1x1-$n/netlib.gf") tq=$(best <"$work/$grid-$n/netlib.gf")
		echo "scaling $grid over 1x1 at N=$n (bests): ours $(ratio "$oq" "$o1"), netlib $(ratio "$tq" "$t1")"
	done
done
