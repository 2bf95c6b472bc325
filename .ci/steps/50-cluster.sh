#!/usr/bin/env bash
# gorun beyond one host, with real components (issue 9). About 2 minutes on 2 cores (5 with
# GORUN_CLUSTER_BENCH=full):
#  1. Slurm: a one-node cluster started here; `srun -n 4` of examples/ring and of hpl (ranks
#     bootstrap from Slurm's variables), and `gorun -n 4` inside `salloc` (gorun hands off to srun).
#  2. Hosts: 3 network namespaces on a bridge, each with its own address and sshd; `gorun
#     --hostfile` runs ring, commbench allreduce and hpl across them; Ctrl-C and a failing rank
#     end every rank; then one host's link is cut mid-run: gorun exits non-zero naming the host, in bounded
#     time, and the ranks on the cut-off host end too.
#  3. Links: tc tbf on the veths at 80, 10 and 1 Gbit/s; commbench allreduce and hpl at each rate
#     (printed; BENCHMARKS.md's "cluster" section records a run). GORUN_CLUSTER_BENCH=full runs
#     larger sizes. netem is not available on this kernel, so no delay is emulated.
# Every daemon is stopped by its PID and the namespaces are removed on any exit (trap).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
# (the lock keeps concurrent apt-get runs of a shared machine apart; harmless in CI)
DEBIAN_FRONTEND=noninteractive flock /tmp/apt.lock apt-get install -y -qq --no-install-recommends \
	slurm-wlm slurmctld slurmd slurm-client munge openssh-server iproute2 bc >/dev/null

# One run at a time on a machine: the namespaces, bridge and Slurm daemons have fixed names and
# ports. (CI machines run one; a shared development machine may run several.)
exec 9>/tmp/gorun-50-cluster.lock
flock -w 1200 9 || { echo "50-cluster: another run holds /tmp/gorun-50-cluster.lock" >&2; exit 1; }
work=$(mktemp -d /tmp/gorun-cluster.XXXXXX)
chmod 755 "$work"
source .ci/lib/slurm-one-node.sh
source .ci/lib/netns-hosts.sh
nhosts=3
cleanup() {
	set +e
	[ -n "${gorun_pid:-}" ] && kill -9 "$gorun_pid" 2>/dev/null
	slurm_down "$work/slurm"
	netns_down "$work/ns" "$nhosts"
	rm -rf "$work"
}
trap cleanup EXIT
step_start=$(date +%s)
say() { echo "50-cluster [$(($(date +%s) - step_start))s]: $*"; }
fail() {
	echo "50-cluster: FAIL: $*" >&2
	exit 1
}

go build -o "$work/bin/gorun" ./cmd/gorun
go build -o "$work/bin/hpl" ./cmd/hpl
go build -o "$work/bin/commbench" ./cmd/commbench
go build -o "$work/bin/ring" ./examples/ring
bin=$work/bin
cd "$work"

# ---- 1. Slurm ---------------------------------------------------------------------------
slurm_up "$work/slurm"
say "slurm up"
timeout 60 srun -n 4 "$bin/ring" --laps 3 >ring.srun
grep -q '^ring of 4 ranks: 3 laps, token 21: correct$' ring.srun || fail "srun ring: $(cat ring.srun)"
timeout 120 srun -n 4 "$bin/hpl" -N 500 --nb 32 -P 2 -Q 2 >hpl.srun
grep -q '^WR11C2R4 *500 *32 *2 *2 ' hpl.srun && grep -q '\.\.\.\.\.\. PASSED$' hpl.srun || fail "srun hpl: $(cat hpl.srun)"
# Inside an allocation gorun runs the ranks as a job step: srun's --label (from --tag-output)
# and SLURM_PROCID show it did.
timeout 60 salloc -n 4 "$bin/gorun" -n 4 --tag-output "$bin/ring" --laps 2 >ring.salloc 2>salloc.err
grep -q '^0: ring of 4 ranks: 2 laps, token 14: correct$' ring.salloc || fail "gorun in salloc: $(cat ring.salloc salloc.err)"
timeout 60 salloc -n 4 "$bin/gorun" sh -c 'echo "task $SLURM_PROCID of $SLURM_STEP_NUM_TASKS"' >tasks.salloc 2>>salloc.err
[ "$(sort tasks.salloc | tr '\n' ' ')" = "task 0 of 4 task 1 of 4 task 2 of 4 task 3 of 4 " ] || fail "gorun in salloc: $(cat tasks.salloc)"
slurm_down "$work/slurm"
say "slurm: srun ring, srun hpl, gorun in salloc: ok"

# ---- 2. Hosts in network namespaces -------------------------------------------------------
netns_up "$work/ns" "$nhosts"
for i in $(seq "$nhosts"); do echo "10.99.0.$i slots=2"; done >hostfile
ssh_args="-i $work/ns/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
G=("$bin/gorun" --hostfile hostfile --ssh-args "$ssh_args" --iface 10.99.0.0/24)
say "$nhosts hosts up"

timeout 120 "${G[@]}" --tag-output "$bin/ring" --laps 5 >ring.out
grep -q '^\[0\] ring of 6 ranks: 5 laps, token 80: correct$' ring.out || fail "ring across hosts: $(cat ring.out)"
timeout 120 "${G[@]}" "$bin/commbench" allreduce --max-size 4M -i 100 -I 10 >allreduce.out
grep -q '^4194304 ' allreduce.out || fail "commbench allreduce across hosts: $(cat allreduce.out)"
timeout 300 "${G[@]}" "$bin/hpl" -N 1000 --nb 64 -P 2 -Q 3 >hpl.out
grep -q '^WR11C2R4 *1000 *64 *2 *3 ' hpl.out && grep -q '\.\.\.\.\.\. PASSED$' hpl.out || fail "hpl across hosts: $(cat hpl.out)"
say "ring, allreduce and hpl across $nhosts hosts: ok"

# no_ranks_left HOST...: nothing but sshd runs in those namespaces.
no_ranks_left() {
	local h p
	for h in "$@"; do
		for p in $(ip netns pids "$h"); do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = sshd ] || return 1
		done
	done
}
# wait_until SECONDS CMD...: poll CMD until it succeeds; false after SECONDS.
wait_until() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}
started() { grep -q '^lap 2:' "$1"; }
hosts=$(seq -f 'h%g' "$nhosts")

# Ctrl-C: one SIGINT to gorun ends every rank on every host.
"${G[@]}" "$bin/ring" --laps 1000000000 >int.out 2>int.err &
gorun_pid=$!
wait_until 60 started int.out || fail "ring did not start: $(cat int.err)"
kill -INT "$gorun_pid"
rc=0
wait "$gorun_pid" || rc=$?
gorun_pid=
[ "$rc" = 130 ] || fail "gorun exited $rc after SIGINT, want 130: $(cat int.err)"
# shellcheck disable=SC2086
wait_until 10 no_ranks_left $hosts || fail "ranks still running after SIGINT: $(ps -o pid,args -p "$(ip netns pids h1 | tr '\n' ,)0")"
say "SIGINT: gorun 130, every rank gone"

# A failing rank on one host ends the ranks on every host; gorun exits with its code.
rc=0
timeout 60 "${G[@]}" sh -c '[ "$GORUN_RANK" = 3 ] && exit 3; exec sleep 60' 2>fail.err || rc=$?
[ "$rc" = 3 ] || fail "gorun exited $rc when rank 3 exited 3: $(cat fail.err)"
grep -q '^gorun: rank 3 on 10.99.0.2 exited with code 3; terminating 5 other ranks$' fail.err || fail "$(cat fail.err)"
# shellcheck disable=SC2086
wait_until 10 no_ranks_left $hosts || fail "ranks still running after rank 3 failed"
say "a failing rank: gorun 3, every rank gone"

# Cut host 3's link mid-run. ssh's keepalives (2 s x 4) usually notice first and gorun names
# the host as lost; if the ranks' peer timeout (20 s here) fires first on a loaded machine,
# gorun names the first to fail in time, which may be a cut-off rank that a peer reported
# lost, then the host it lost contact with. The peer timeout
# bounds how long the ranks on the cut-off host keep running.
"${G[@]}" --peer-timeout 20s "$bin/ring" --laps 1000000000 >cut.out 2>cut.err &
gorun_pid=$!
wait_until 60 started cut.out || fail "ring did not start: $(cat cut.err)"
ip link set "vgorun$nhosts" down
cut_at=$(date +%s.%N)
wait_until 40 eval '! kill -0 "$gorun_pid" 2>/dev/null' || fail "gorun still running 40 s after the link was cut"
rc=0
wait "$gorun_pid" || rc=$?
gorun_pid=
gorun_took=$(echo "$(date +%s.%N) - $cut_at" | bc)
[ "$rc" != 0 ] || fail "gorun exited 0 after a host was cut off"
grep -Eq "10.99.0.$nhosts is lost: ssh to 10.99.0.$nhosts failed or lost the connection|lost contact with 10.99.0.$nhosts \(ranks 4,5\)" cut.err ||
	fail "gorun did not name the lost host: $(cat cut.err)"
# shellcheck disable=SC2086
wait_until 10 no_ranks_left $(seq -f 'h%g' $((nhosts - 1))) || fail "ranks left on the live hosts after the cut"
wait_until 40 no_ranks_left "h$nhosts" || fail "ranks on the cut-off host still running 40 s after the cut"
cut_took=$(echo "$(date +%s.%N) - $cut_at" | bc)
ip link set "vgorun$nhosts" up
say "link cut: gorun exited $rc after ${gorun_took}s naming 10.99.0.$nhosts; the cut-off ranks ended after ${cut_took}s"
sed 's/^/    /' cut.err

# ---- 3. Emulated links --------------------------------------------------------------------
# shape RATE: tbf on both directions of every host's link ("" removes it).
shape() {
	local i
	for i in $(seq "$nhosts"); do
		tc qdisc del dev "vgorun$i" root 2>/dev/null || true
		ip netns exec "h$i" tc qdisc del dev eth0 root 2>/dev/null || true
		if [ -n "${1:-}" ]; then
			tc qdisc add dev "vgorun$i" root tbf rate "$1" burst "$2" latency 10ms
			ip netns exec "h$i" tc qdisc add dev eth0 root tbf rate "$1" burst "$2" latency 10ms
		fi
	done
}
if [ "${GORUN_CLUSTER_BENCH:-}" = full ]; then
	sizes=(--max-size 16M -i 200 -I 20) hplN=3000 reps=3
else
	sizes=(--max-size 4M -i 50 -I 5) hplN=1500 reps=1
fi
# One rank per host: with more ranks than the machine's 2 cores the figures measure the
# scheduler more than the links.
echo "10.99.0.1 slots=3" >onehost
for i in $(seq "$nhosts"); do echo "10.99.0.$i slots=1"; done >spread
# The configurations run interleaved, $reps rounds; each keeps its best figures (the shared
# machine's load only ever makes them worse).
configs=("one host, shm|onehost|1|" "veth, no limit|spread|$nhosts|" "tbf 80 Gbit/s|spread|$nhosts|80gbit 8mb"
	"tbf 10 Gbit/s|spread|$nhosts|10gbit 1mb" "tbf 1 Gbit/s|spread|$nhosts|1gbit 1mb")
declare -A best
for r in $(seq "$reps"); do
	for c in "${configs[@]}"; do
		IFS='|' read -r label hf nh rate <<<"$c"
		# shellcheck disable=SC2086
		shape $rate
		G3=(timeout 300 "$bin/gorun" --hostfile "$hf" --ssh-args "$ssh_args" --iface 10.99.0.0/24 -n 3)
		"${G3[@]}" "$bin/commbench" allreduce "${sizes[@]}" --csv >a.csv || fail "commbench on $label"
		g=$("${G3[@]}" "$bin/hpl" -N "$hplN" --nb 128 -P 1 -Q 3 | awk '/^WR/ {print $7 + 0}')
		[ -n "$g" ] || fail "hpl on $label"
		for sz in 8192 1048576 4194304; do
			us=$(awk -F, -v s="$sz" '$3 == s {print $4 + 0}' a.csv)
			k="$label|$sz"
			best[$k]=$(awk -v a="$us" -v b="${best[$k]:-1e99}" 'BEGIN {print (a < b) ? a : b}')
		done
		best[$label|hpl]=$(awk -v a="$g" -v b="${best[$label|hpl]:-0}" 'BEGIN {print (a > b) ? a : b}')
	done
done
shape ""
echo "link,hosts,allreduce 8K (us),allreduce 1M (us),allreduce 4M (us),hpl N=$hplN (Gflops)" >bench.csv
for c in "${configs[@]}"; do
	IFS='|' read -r label hf nh rate <<<"$c"
	printf '%s,%s,%.0f,%.0f,%.0f,%s\n' "$label" "$nh" "${best[$label|8192]}" "${best[$label|1048576]}" "${best[$label|4194304]}" "${best[$label|hpl]}" >>bench.csv
done
sed 's/^/    /' bench.csv
uptime | sed 's/^/    load:/'
say "ok"
