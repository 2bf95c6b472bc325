#!/usr/bin/env bash
# Point-to-point and np=2 allreduce, gorun vs Open MPI 4.1, side by side in one run, over TCP
# (--mca btl tcp,self vs --transport tcp) and shared memory (--mca btl self,vader vs --transport
# shm), plus a single-core memcpy of 64 MiB as the physical limit of a one-copy transfer.
# Rounds alternate ours and Open MPI's; each figure is the best of its rounds.
#
# usage: bench/comm/run.sh [--rounds N]
# needs: go, gcc, mpicc and mpirun (apt-get install openmpi-bin libopenmpi-dev)
set -euo pipefail
rounds=3
[ "${1:-}" = --rounds ] && rounds=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/mpibench" "$root/bench/collectives/mpibench.c"
(cd "$root" && go build -o "$tmp/gorun" ./cmd/gorun && go build -o "$tmp/commbench" ./cmd/commbench)
cat >"$tmp/memcpy.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(void) {
	size_t n = 64 << 20; char *a = malloc(n), *b = malloc(n);
	memset(a, 1, n); memset(b, 2, n);
	double best = 1e9;
	for (int i = 0; i < 20; i++) {
		struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
		memcpy(b, a, n); clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (s < best) best = s;
		a[i] = b[n - 1 - i];
	}
	printf("memcpy,1,%zu,%.3f,0,0,%.1f,20\n", n, best * 1e6, n / best / 1e6);
	return 0;
}
C
gcc -O2 -o "$tmp/memcpy" "$tmp/memcpy.c"
cd "$tmp"
mpi() { # btl yield test min max iters iters_large
	mpirun --allow-run-as-root --mca pml ob1 --mca btl "$1" --mca mpi_yield_when_idle "$2" -np 2 \
		-x MALLOC_MMAP_THRESHOLD_=1073741824 -x MALLOC_TRIM_THRESHOLD_=4294967296 \
		./mpibench "$3" "$4" "$5" "$6" "$7" 200 10 | grep -v '^test,'
}
ours() { # transport test min max iters iters_large
	./gorun -n 2 --transport "$1" ./commbench "$2" --csv -m "$3" -M "$4" -i "$5" -I "$6" -x 200 -X 10 | grep -v '^test,'
}
echo "start: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
	echo "round $r/$rounds" >&2
	for t in "tcp tcp,self" "shm self,vader"; do
		read -r ourt btl <<<"$t"
		for c in "latency 8 8 10000 1000" "latency 4194304 4194304 1000 200" "allreduce 16777216 16777216 1000 20"; do
			read -r test min max it itl <<<"$c"
			ours "$ourt" "$test" "$min" "$max" "$it" "$itl" | sed "s/^/ours,$ourt,/"
			for y in 0 1; do
				mpi "$btl" "$y" "$test" "$min" "$max" "$it" "$itl" | sed "s/^/mpi,$ourt,/"
			done
		done
	done
	./memcpy | sed "s/^/ref,none,/"
done >"$tmp/all.csv"
echo "end: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/all.csv" <<'PY'
import csv, sys
best = {}
for row in csv.reader(open(sys.argv[1])):
    side, tr, test, size, avg, mbs = row[0], row[1], row[2], int(row[4]), float(row[5]), float(row[8])
    k = (side, tr, test, size)
    if test == "latency" and size <= 8:
        v = avg  # one-way microseconds: lower is better
        best[k] = min(best.get(k, v), v)
    else:
        best[k] = max(best.get(k, 0), mbs / 1000)  # GB/s: higher is better
memcpy = best[("ref", "none", "memcpy", 64 << 20)]
print("| transport | test | gorun | Open MPI | ratio (gorun/OMPI) |")
print("|---|---|---|---|---|")
for tr in ("tcp", "shm"):
    for test, size, unit in (("latency", 8, "us one-way"), ("latency", 4 << 20, "GB/s"), ("allreduce", 16 << 20, "GB/s")):
        o, m = best.get(("ours", tr, test, size)), best.get(("mpi", tr, test, size))
        name = "ping-pong 8 B" if size == 8 else ("ping-pong 4 MiB" if test == "latency" else "allreduce 16 MiB np=2")
        print(f"| {tr} | {name} ({unit}) | {o:.2f} | {m:.2f} | {o/m:.2f} |")
    o = best.get(("ours", tr, "latency", 4 << 20))
    print(f"| {tr} | ping-pong 4 MiB as a fraction of memcpy 64 MiB ({memcpy:.1f} GB/s) | {o/memcpy:.2f} | {best.get(('mpi', tr, 'latency', 4 << 20))/memcpy:.2f} | |")
PY
