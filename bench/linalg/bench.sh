#!/usr/bin/env bash
# Side-by-side benchmark of gorun's linalg against Debian's OpenBLAS:
# DGEMM n=2048 and DGETRF n=4096, 1 and 2 threads, runs interleaved
# (ours, OpenBLAS, ours, ...) so that both see the same machine load.
#
# Usage: bench/linalg/bench.sh [ROUNDS]   (default 3; each round = one run
#        of each program, each run = best of several repetitions)
#
# OpenBLAS runs with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` so that
# it picks its fastest (AVX-512) kernel on this machine rather than the
# preset Haswell one. Needs gcc and libopenblas-dev (installed if missing).
set -euo pipefail
rounds=${1:-3}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! echo '#include <cblas.h>' | gcc -E - >/dev/null 2>&1; then
	apt-get install -y --no-install-recommends libopenblas-dev gcc libc6-dev >/dev/null
fi
gcc -O2 -o "$tmp/openblas" bench/linalg/openblas/driver.c -lopenblas
go build -o "$tmp/gorun" ./bench/linalg/linalgbench

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# OpenBLAS: $(dpkg-query -W -f '${Package} ${Version}' 'libopenblas0-pthread' 2>/dev/null || echo unknown)"
printf '%-8s %5s %3s | %9s %9s %6s | %9s %9s %6s\n' routine n thr gorun openblas ratio gorun-cpu ob-cpu ratio
for spec in "dgemm 2048 4" "dgetrf 4096 2"; do
	set -- $spec
	routine=$1 n=$2 reps=$3
	for t in 1 2; do
		: >"$tmp/ours" && : >"$tmp/theirs"
		for _ in $(seq "$rounds"); do
			"$tmp/gorun" -threads "$t" "$routine" "$n" "$reps" >>"$tmp/ours"
			env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$t" \
				"$tmp/openblas" "$routine" "$n" "$reps" >>"$tmp/theirs"
		done
		# Best wall-clock GFLOP/s of each, and (1 thread) GFLOP/s from the
		# least CPU time, which the other users of the machine disturb less.
		awk -v r="$routine" -v n="$n" -v t="$t" -v f="$(
			[ "$routine" = dgemm ] && echo 2 || echo 0.6666666667
		)" '
			FNR == 1 { file++ }
			{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			  g = v["gflops"] + 0; c = f * n * n * n / v["cpu_s"] / 1e9
			  if (g > best[file]) best[file] = g
			  if (c > cbest[file]) cbest[file] = c }
			END {
				if (t == 1) printf "%-8s %5d %3d | %9.1f %9.1f %6.2f | %9.1f %9.1f %6.2f\n", r, n, t, best[1], best[2], best[1] / best[2], cbest[1], cbest[2], cbest[1] / cbest[2]
				else printf "%-8s %5d %3d | %9.1f %9.1f %6.2f | %9s %9s %6s\n", r, n, t, best[1], best[2], best[1] / best[2], "-", "-", "-"
			}' "$tmp/ours" "$tmp/theirs"
	done
done
