#!/usr/bin/env bash
# `llm stage` against scp of the same bytes, over tc-shaped links between three "hosts"
# (network namespaces with their own sshd, as .ci/lib/netns-hosts.sh, under other names and
# addresses so that it can run beside CI's: st1..st3, 10.97.0.0/24, bridge brstage).
#
#   bench/stage/run.sh MODEL.gguf [RATE] [REPS]     # RATE for tc tbf, default 1gbit; REPS 3
#
# Layout: TP=4, host st1 has 2 ranks and the model, st2 and st3 one rank each. Each run stages
# into fresh directories; the bytes st2 and st3 receive (their rank's shard plus the shared
# tensors) are then copied with scp from st1 over the same shaped link, alternating with the
# staging runs. Then one staging is killed midway (SIGINT to gorun) and run again: the second
# run's "already staged" count and bytes show what was not resent. Needs root, iproute2, tc and
# openssh-server. Prints the raw lines and a summary with medians.
set -euo pipefail
model=$(realpath "$1")
rate=${2:-1gbit}
reps=${3:-3}
cd "$(dirname "$0")/../.."
W=$(mktemp -d)
N=3
go build -o "$W/llm" ./cmd/llm
go build -o "$W/gorun" ./cmd/gorun

NETNS_BRIDGE=brstage NETNS_HOST=st NETNS_NET=10.97.0 NETNS_VETH=vstage
. .ci/lib/netns-hosts.sh
trap 'netns_down "$W" $N; rm -rf "$W"' EXIT
netns_up "$W" $N
# Shape what enters st2 and st3 (the bridge's egress into them).
for i in 2 3; do
	tc qdisc add dev "vstage$i" root tbf rate "$rate" burst 1mb latency 10ms
done
printf '%s\n' "10.97.0.1 slots=2" "10.97.0.2 slots=1" "10.97.0.3 slots=1" >"$W/hostfile"
ln -s "$model" "$W/src0.gguf"
ln -s "$model" "$W/src1.gguf" # ranks 0 and 1 (st1) have the model; 2 and 3 do not
G=("$W/gorun" --hostfile "$W/hostfile" --ssh-args "-i $W/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" --iface 10.97.0.0/24 -n 4)
echo "# model $model ($(stat -c %s "$model") bytes), tbf $rate into st2 and st3, $(nproc) cores, load: $(uptime)"

stage_once() { # DIR: stage into DIR/{host} (the hosts share this machine's disk); prints the receivers' lines
	"${G[@]}" "$W/llm" stage --quiet -m "$W/src{rank}.gguf" --to "$1/{host}"
}
declare -a st2 st3 scp2 scp3
for k in $(seq "$reps"); do
	out=$(stage_once "$W/run$k")
	echo "$out" | sed 's/^/stage: /'
	b2=$(sed -n 's/^rank 2: .* \([0-9]*\) bytes received in \([0-9.]*\)s .*$/\1/p' <<<"$out")
	t2=$(sed -n 's/^rank 2: .* \([0-9]*\) bytes received in \([0-9.]*\)s .*$/\2/p' <<<"$out")
	b3=$(sed -n 's/^rank 3: .* \([0-9]*\) bytes received in \([0-9.]*\)s .*$/\1/p' <<<"$out")
	t3=$(sed -n 's/^rank 3: .* \([0-9]*\) bytes received in \([0-9.]*\)s .*$/\2/p' <<<"$out")
	st2+=("$(python3 -c "print($b2/$t2/1e6)")")
	st3+=("$(python3 -c "print($b3/$t3/1e6)")")
	rm -rf "$W/run$k"
	# scp of the same byte counts, st1 -> st2 and st1 -> st3 at once, as staging sends them.
	head -c "$b2" "$model" >"$W/b2"
	head -c "$b3" "$model" >"$W/b3"
	s=$(date +%s.%N)
	( ip netns exec st1 scp -O -q -i "$W/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$W/b2" root@10.97.0.2:"$W/c2"; echo "$(date +%s.%N)" >"$W/e2" ) &
	p2=$!
	( ip netns exec st1 scp -O -q -i "$W/id" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$W/b3" root@10.97.0.3:"$W/c3"; echo "$(date +%s.%N)" >"$W/e3" ) &
	p3=$!
	wait $p2 $p3
	cmp -s "$W/b2" "$W/c2" && cmp -s "$W/b3" "$W/c3"
	scp2+=("$(python3 -c "print($b2/($(cat "$W/e2")-$s)/1e6)")")
	scp3+=("$(python3 -c "print($b3/($(cat "$W/e3")-$s)/1e6)")")
	echo "scp: st2 $b2 bytes at ${scp2[-1]} MB/s, st3 $b3 bytes at ${scp3[-1]} MB/s; stage: st2 ${st2[-1]} MB/s, st3 ${st3[-1]} MB/s"
	rm -f "$W/b2" "$W/b3" "$W/c2" "$W/c3"
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median MB/s: stage st2 $(med "${st2[@]}") st3 $(med "${st3[@]}"); scp st2 $(med "${scp2[@]}") st3 $(med "${scp3[@]}")"

# Interrupted midway, then resumed.
"${G[@]}" "$W/llm" stage --quiet -m "$W/src{rank}.gguf" --to "$W/resume/{host}" >"$W/int.out" 2>&1 &
gp=$!
# Kill once st2 has some tensors but not all (polling its manifest).
for _ in $(seq 600); do
	n=$(grep -c '"sha256"' "$W/resume/st2/stage.json" 2>/dev/null || true)
	[ "${n:-0}" -ge 40 ] && break
	sleep 0.1
done
kill -INT $gp
wait $gp || true
for r in st2 st3; do
	python3 - "$W/resume/$r/stage.json" <<'PY' || true
import json, sys
m = json.load(open(sys.argv[1]))
done = [t for t in m["tensors"] if t.get("sha256")]
print(f"interrupted: {sys.argv[1].split('/')[-2]}: {len(done)} of {len(m['tensors'])} tensors staged, {sum(t['bytes'] for t in done)} of {m['bytes']} bytes")
PY
	[ -f "$W/resume/$r/stage.json" ] || echo "interrupted: $r: no manifest yet"
done
stage_once "$W/resume" | sed 's/^/resumed: /'
echo "generate from the staged copies:"
"${G[@]}" "$W/llm" generate -m "$W/resume/{host}" -p "Once upon a time" -n 8 --quiet 2>&1 | tail -3
echo
echo "generate from the model where every host has it (ranks 2, 3 read st1's path on the shared disk):"
"${G[@]}" "$W/llm" generate -m "$model" -p "Once upon a time" -n 8 --quiet 2>&1 | tail -3
