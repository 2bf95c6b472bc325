#!/usr/bin/env bash
# Prompt caching: time-to-first-token of a chat's second turn, whose prompt repeats a long
# first turn (history, answer) and adds a short question, on `llm serve` with the prompt cache
# (the default) and without it (--no-cache-prompt), one server after the other for ROUNDS
# rounds so that drift on a shared machine hits both. Each server has one slot and
# `llm bench-serve --multi-turn WORDS --interleave` sends an unrelated short chat between the
# two turns, which takes that slot: the cached side must find the history in the KV blocks kept
# across slots (--cache-ram), not in the slot. Prints one JSON line per (side, round) with
# `uptime` before each, then the medians and their ratio.
#
#   bench/serve/cache.sh MODEL.gguf [words] [rounds]
#   bench/serve/cache.sh 349M-q4_k.gguf 1900 2
#
# THREADS (2) per server, CTX (3072) tokens per slot, N (8) tokens generated per turn;
# CACHE_ARGS adds flags to the cached side (e.g. "--cache-type-k q8_0 --cache-type-v q8_0").
set -euo pipefail
model=$(realpath "${1:?usage: cache.sh MODEL.gguf [words] [rounds]}")
words=${2:-1900}
rounds=${3:-2}
threads=${THREADS:-2}
ctx=${CTX:-3072}
n=${N:-8}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/gorun" "$root/cmd/gorun"
go build -o "$work/llm" "$root/cmd/llm"
port=$((19000 + RANDOM % 1000))

wait_up() {
	for _ in $(seq 1200); do
		if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			cat "$work/server.log" >&2
			return 1
		fi
		sleep 0.5
	done
	return 1
}

: >"$work/all.jsonl"
for round in $(seq "$rounds"); do
	for side in cache nocache; do
		port=$((port + 1))
		flags=()
		if [ "$side" = nocache ]; then flags=(--no-cache-prompt); else read -ra flags <<<"${CACHE_ARGS:-}"; fi
		"$work/gorun" -n 1 "$work/llm" serve -m "$model" -t "$threads" --port "$port" --parallel 1 -c "$ctx" "${flags[@]}" >"$work/server.log" 2>&1 &
		pid=$!
		wait_up
		echo "# round $round $side: $(uptime)" >&2
		"$work/llm" bench-serve --url "http://127.0.0.1:$port" --multi-turn "$words" --interleave --requests 1 -n "$n" -o json |
			sed "s/^{/{\"side\":\"$side\",\"round\":$round,/" | tee -a "$work/all.jsonl"
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		pid=
	done
done
python3 - "$work/all.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {s: statistics.median(r["ttft_turn2_ms"] for r in rows if r["side"] == s) for s in ("cache", "nocache")}
r = rows[-1]
print(f"# turn-2 prompt {r['turn2_prompt_tokens']} tokens; cached side reused {[x['turn2_cached_tokens'] for x in rows if x['side']=='cache']}")
print(f"# median turn-2 TTFT: cache {med['cache']:.0f} ms, no cache {med['nocache']:.0f} ms, ratio {med['cache']/med['nocache']:.3f}")
PY
