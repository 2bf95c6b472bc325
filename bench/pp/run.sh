#!/usr/bin/env bash
# Pipeline parallelism against tensor parallelism across three "hosts" (network namespaces
# with their own sshd, as .ci/lib/netns-hosts.sh, under other names and addresses so that it
# can run beside CI's and bench/stage's: pp1..pp3, 10.95.0.0/24, bridge brpp), one rank each,
# every link into a host shaped by tc tbf:
#
#   bench/pp/run.sh [MODEL.gguf] [REPS] [RATES]   # REPS 3; RATES "10gbit 1gbit"
#
# Without MODEL it writes a random-weight 12-layer llama of dim 768, 12 heads (6 KV), FFN 2048,
# vocabulary 32000, Q8_0 (its heads divide by 3, so TP=3 runs). For each rate: `llm bench`
# (prefill -p 128, decode -n 32) at TP=3 and at PP=3 (4 layers per host), alternating, REPS
# times each; prints the raw JSON lines, medians, and `llm plan`'s recommendation for the same
# hosts and link. Needs root, iproute2, tc and openssh-server.
set -euo pipefail
reps=${2:-3}
rates=${3:-"10gbit 1gbit"}
cd "$(dirname "$0")/../.."
W=$(mktemp -d)
N=3
go build -o "$W/llm" ./cmd/llm
go build -o "$W/gorun" ./cmd/gorun
if [ -n "${1:-}" ]; then
	model=$(realpath "$1")
else
	model=$W/m.gguf
	"$W/llm" mkmodel --shape 1B --layers 12 --dim 768 --heads 12 --kv-heads 6 --ffn 2048 --type q8_0 -o "$model" >&2
fi

NETNS_BRIDGE=brpp NETNS_HOST=pp NETNS_NET=10.95.0 NETNS_VETH=vpp
. .ci/lib/netns-hosts.sh
trap 'netns_down "$W" $N; rm -rf "$W"' EXIT
netns_up "$W" $N
printf '%s\n' "10.95.0.1 slots=1" "10.95.0.2 slots=1" "10.95.0.3 slots=1" >"$W/hostfile"
G=("$W/gorun" --hostfile "$W/hostfile" --ssh-args "-i $W/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" --iface 10.95.0.0/24 -n 3)
echo "# model $model ($(stat -c %s "$model") bytes), $(nproc) cores, load: $(uptime)"
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for rate in $rates; do
	for i in $(seq $N); do
		tc qdisc replace dev "vpp$i" root tbf rate "$rate" burst 1mb latency 10ms
	done
	declare -a tpp tpg ppp ppg
	tpp=() tpg=() ppp=() ppg=()
	for k in $(seq "$reps"); do
		for layout in tp pp; do
			extra=()
			[ $layout = pp ] && extra=(--pp 3)
			out=$("${G[@]}" "$W/llm" bench -m "$model" -p 128 -n 32 -r 1 -o jsonl "${extra[@]}")
			echo "$rate $layout: $out" | tr '\n' ' '
			echo
			p=$(python3 -c 'import json,sys; print([json.loads(l)["tokens_per_s"] for l in sys.stdin if l.strip()][0])' <<<"$out")
			g=$(python3 -c 'import json,sys; print([json.loads(l)["tokens_per_s"] for l in sys.stdin if l.strip()][1])' <<<"$out")
			if [ $layout = tp ]; then tpp+=("$p") tpg+=("$g"); else ppp+=("$p") ppg+=("$g"); fi
		done
	done
	echo "median $rate: prefill tok/s TP=3 $(med "${tpp[@]}") PP=3 $(med "${ppp[@]}"); decode tok/s TP=3 $(med "${tpg[@]}") PP=3 $(med "${ppg[@]}")"
	bw=${rate%bit}
	"$W/llm" plan -m "$model" --hostfile "$W/hostfile" --mem 8G --tp 1 --link-bw "${bw^^}" | grep -A1 "^recommended\|^  TP=3:\|^  PP=3:" | sed "s/^/plan $rate: /"
done
echo "# load after: $(uptime)"
