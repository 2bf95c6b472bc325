#!/usr/bin/env bash
# Side-by-side benchmark of gorun's collectives (cmd/commbench under gorun) and Open MPI 4.1
# (bench/collectives/mpibench.c, Debian's openmpi-bin) on the same sizes and rank counts, over
# TCP (ours: GORUN_TRANSPORT=tcp; Open MPI: --mca btl tcp,self) and shared memory (ours:
# GORUN_TRANSPORT=shm; Open MPI: --mca btl self,vader). Runs alternate between the two, --rounds times; each figure is
# the best of its rounds (lowest latency, highest bandwidth). Prints the table; --record also
# appends it to bench/results/DATE-collectives.md (BENCHMARKS.md's table is updated by hand
# from a run worth keeping).
#
# usage: bench/collectives/run.sh [--rounds N] [--record] [--no-update] [--quick] [--only REGEX]
#   --no-update: accepted for older callers; printing only is the default
#   --quick: fewer iterations (a smoke run of the script itself, not for the record)
#   --only: run only the cases whose "transport test np min" matches the extended REGEX
# needs: go, mpicc and mpirun (apt-get install openmpi-bin libopenmpi-dev), python3
set -euo pipefail

rounds=3 update=0 quick=0 only=
# CASE_TIMEOUT bounds each command (seconds): an oversubscribed Open MPI run on a loaded
# machine can take many minutes for 1000 small operations; such a figure is left out.
CASE_TIMEOUT=${CASE_TIMEOUT:-900}
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--no-update) update=0; shift ;;
	--record) update=1; shift ;;
	--quick) quick=1; shift ;;
	--only) only="$2"; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--record] [--no-update] [--quick] [--only REGEX]" >&2; exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v mpicc >/dev/null || { echo "mpicc not found: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
mpicc -O2 -o "$tmp/mpibench" "$root/bench/collectives/mpibench.c"
(cd "$root" && go build -o "$tmp/gorun" ./cmd/gorun && go build -o "$tmp/commbench" ./cmd/commbench)
cd "$tmp"

ncpu=$(nproc)
# Open MPI busy-polls by default, which collapses when other jobs load the machine; it is run
# both ways (default, and mpi_yield_when_idle=1) and the better figure is kept.
mpi() { # transport yield np test min max iters iters_large warmup warmup_large
	local btl=tcp,self yield=$2 np=$3
	[ "$1" = shm ] && btl=self,vader
	shift 3
	local over=()
	[ "$np" -gt "$ncpu" ] && over=(--oversubscribe)
	timeout "$CASE_TIMEOUT" mpirun --allow-run-as-root --mca pml ob1 --mca btl "$btl" --mca mpi_yield_when_idle "$yield" \
		"${over[@]}" -np "$np" -x MALLOC_MMAP_THRESHOLD_=1073741824 -x MALLOC_TRIM_THRESHOLD_=4294967296 \
		./mpibench "$@" | grep -v '^test,'
}
ours() { # label transport env np test min max iters iters_large warmup warmup_large
	local label=$1 transport=$2 env=$3 np=$4 test=$5
	timeout "$CASE_TIMEOUT" ./gorun -n "$np" -x GORUN_TRANSPORT="$transport" -x "$env" ./commbench "$test" --csv -m "$6" -M "$7" \
		-i "$8" -I "$9" -x "${10}" -X "${11}" | grep -v '^test,' | sed "s/^$test,/$label,/"
}

# transport test np min max iters iters_large warmup warmup_large [VAR=value for ours: an extra row]
cases=(
	"tcp allreduce 2 8 8 1000 100 200 10"
	"tcp allreduce 2 16777216 67108864 1000 20 200 3"
	"tcp allreduce 4 8 8 1000 100 200 10"
	"tcp allreduce 4 16777216 67108864 1000 20 200 3"
	"tcp latency 2 8 8 10000 1000 1000 100"
	"tcp latency 2 4194304 4194304 1000 100 100 10"
	"tcp bcast 4 8 8 1000 100 200 10"
	"tcp bcast 4 8 8 1000 100 200 10 GORUN_COLL_CHECK=0"
	"tcp bcast 4 16777216 16777216 1000 20 200 3"
	"shm allreduce 2 8 8 1000 100 200 10"
	"shm allreduce 2 16777216 16777216 1000 20 200 3"
	"shm allreduce 4 8 8 1000 100 200 10"
	"shm allreduce 4 16777216 16777216 1000 20 200 3"
)
: >"$tmp/ours.csv"
: >"$tmp/mpi.csv"
for ((r = 1; r <= rounds; r++)); do
	for c in "${cases[@]}"; do
		read -r tr test np min max it itl wu wul env <<<"$c"
		if [ -n "$only" ] && ! grep -Eq -- "$only" <<<"$tr $test $np $min"; then continue; fi
		if [ "$quick" = 1 ]; then it=20 itl=3 wu=2 wul=1; fi
		label="$tr:$test"
		[ -n "$env" ] && label="$tr:$test ($env)"
		echo "round $r/$rounds: $label np=$np $min..$max bytes" >&2
		ours "$label" "$tr" "${env:-GORUN_COLL_CHECK=1}" "$np" "$test" "$min" "$max" "$it" "$itl" "$wu" "$wul" >>"$tmp/ours.csv" ||
			echo "ours: $label np=$np failed or ran past ${CASE_TIMEOUT}s" >&2
		for y in 0 1; do
			mpi "$tr" "$y" "$np" "$test" "$min" "$max" "$it" "$itl" "$wu" "$wul" | sed "s/^$test,/$label,/" >>"$tmp/mpi.csv" ||
				echo "Open MPI (yield $y): $label np=$np failed or ran past ${CASE_TIMEOUT}s" >&2
		done
	done
done

python3 - "$tmp/ours.csv" "$tmp/mpi.csv" "$root/bench/results/$(date -u +%Y-%m-%d)-collectives.md" "$update" "$rounds" "$quick" <<'PY'
import csv, datetime, subprocess, sys
ours_f, mpi_f, md, update, rounds, quick = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5], sys.argv[6] == "1"

def best(path):
    out = {}
    for row in csv.reader(open(path)):
        if not row:
            continue
        test, np, size, avg = row[0], int(row[1]), int(row[2]), float(row[3])
        key = (test, np, size)
        out[key] = min(out.get(key, avg), avg)
    return out

o, m = best(ours_f), best(mpi_f)

def human(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n // k} {unit}"
    return f"{n} B"

# (transport, test, np, size) -> (kind, ratio); issue 3 for tcp, issue 4 for shm
targets = {("tcp", "allreduce", 8): ("latency", 1.5), ("tcp", "allreduce", 16 << 20): ("bandwidth", 1.0),
           ("tcp", "allreduce", 64 << 20): ("bandwidth", 1.0), ("shm", "allreduce", 8): ("latency", 1.5),
           ("shm", "allreduce", 16 << 20): ("bandwidth", 1.0)}
rows = []
for key in sorted(o, key=lambda k: (k[0].split(":")[0] != "tcp", not k[0].split(":")[1].startswith("allreduce"), k[0], k[1], k[2])):
    if key not in m:
        continue
    label, np, size = key
    tr, test = label.split(":", 1)
    us_o, us_m = o[key], m[key]
    kind = "latency" if size <= 8 << 10 else "bandwidth"
    if kind == "latency":
        ours_s, mpi_s = f"{us_o:.1f} us", f"{us_m:.1f} us"
        ratio = us_o / us_m
        rtext = f"{ratio:.2f}x the time"
    else:
        gbo, gbm = size / us_o / 1e3, size / us_m / 1e3
        ours_s, mpi_s = f"{gbo:.2f} GB/s", f"{gbm:.2f} GB/s"
        ratio = gbo / gbm
        rtext = f"{ratio:.2f}x the bandwidth"
    tgt = targets.get((tr, test, size)) or targets.get((tr, test, size, np))
    if tgt:
        ok = ratio <= tgt[1] if tgt[0] == "latency" else ratio >= tgt[1]
        ttext = (f"<= {tgt[1]}x" if tgt[0] == "latency" else f">= {tgt[1]}x") + (" met" if ok else " **missed**")
    else:
        ttext = "-"
    name = "ping-pong (one-way)" if test == "latency" else test.replace("(GORUN", "(ours with GORUN")
    rows.append(f"| {tr} | {name} | {np} | {human(size)} | {ours_s} | {mpi_s} | {rtext} | {ttext} |")

date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
try:
    load = open("/proc/loadavg").read().split()[0]
except OSError:
    load = "?"
ncpu = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
# The CPU as the machine reports it (these VMs change between sessions).
cpu, simd = "?", "no AVX-512"
try:
    info = open("/proc/cpuinfo").read()
    cpu = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("model name")), "?")
    if " avx512f" in info:
        simd = "AVX-512"
    elif " avx2" in info:
        simd = "AVX2"
except OSError:
    pass
body = f"""Measured {date} by `bench/collectives/run.sh` (best of {rounds} alternating rounds{", QUICK smoke run: not for the record" if quick else ""};
machine: {ncpu}-core {cpu} VM, {simd}, load average {load} at the end; np=4 is oversubscribed).
- ours: `gorun -n NP -x GORUN_TRANSPORT=tcp|shm commbench TEST --csv -m SIZE -M SIZE` (float32 sum for allreduce)
- peer: `mpirun --allow-run-as-root --mca pml ob1 --mca btl tcp,self|self,vader --mca mpi_yield_when_idle 0|1 [--oversubscribe] -np NP -x MALLOC_MMAP_THRESHOLD_=1073741824 -x MALLOC_TRIM_THRESHOLD_=4294967296 mpibench TEST ...`
  (the better of busy-polling and yielding: under load from other jobs Open MPI's default polling collapses)
  (Open MPI {subprocess.run(["sh", "-c", "mpirun --version 2>/dev/null | head -1 | awk '{{print $NF}}'"], capture_output=True, text=True).stdout.strip()}, `bench/collectives/mpibench.c`, same timing method: warm-up, then timed iterations with a barrier after each collective call; average over ranks)
- bandwidth = message size / latency; 1000 iterations for 8 B, 20 (after 3 warm-up) for 16 and 64 MiB, 100 for 4 MiB ping-pong

| transport | test | np | size | gorun commbench | Open MPI 4.1 | ours vs Open MPI | issue target |
|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + """

Reading the table: 8-byte operations are latency-bound and follow the transport's one-way
latency (ping-pong row). Small allreduces and broadcasts carry the argument check (every rank
exchanges a fingerprint of its arguments in log2(p) rounds, so bad input errors everywhere instead
of hanging): allreduce needs those rounds anyway, but a broadcast then costs every rank the full
depth of the exchange, where a binomial tree lets most ranks finish after one hop; the
GORUN_COLL_CHECK=0 row is the broadcast without the check. Other jobs loaded the machine during
the run (load average above): absolute figures are low and noisy; the ratios come from
alternating runs.
"""
print(body)
if update:
    with open(md, "a") as f:
        f.write("\n" + body + "\n")
    print(f"appended to {md}", file=sys.stderr)
PY
