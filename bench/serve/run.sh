#!/usr/bin/env bash
# Side-by-side serving: `llm bench-serve` against `llm serve` (gorun TP=1 with 1 thread, TP=2
# with two processes of 1 thread) and against llama.cpp's llama-server on the same GGUF file
# with the same threads (-t 1, -t 2), the same slots and context per slot, one configuration
# after the other, for ROUNDS rounds so that drift on a shared machine hits every side. The
# same client (llm bench-serve) drives every server: streamed /v1/completions, temperature 0,
# ignore_eos (every request generates exactly N tokens), distinct prompts (no prompt cache hit).
# Prints one JSON line per (side, round, concurrency), with the CPU seconds the server used for
# that level (the figure least disturbed by other load), and `uptime` before each run; each
# server first answers one untimed request.
#
#   bench/serve/run.sh PATH/TO/llama-server MODEL.gguf [concurrency] [n] [rounds]
#   bench/serve/run.sh /work/peers/llama.cpp/build/bin/llama-server m.gguf 1,4,16 32 2
#
# SIDES (default "ours1 llama1 ours2 llama2") picks the runs; SLOTS (16) and CTX (128 tokens
# per slot) size the KV caches of both servers; LLAMA_ARGS adds llama-server flags (on a
# machine with more busy threads than cores, "--poll 0": its threads otherwise spin waiting for
# each other, and -t 2 ran 300x slower here); OURS_ARGS adds `llm serve` flags (e.g.
# "--cpuprofile /tmp/serve.prof": the file is rewritten by every ours side, so give one side).
set -euo pipefail
llama_server=$(realpath "${1:?usage: run.sh PATH/TO/llama-server MODEL.gguf [concurrency] [n] [rounds]}")
model=$(realpath "${2:?usage: run.sh PATH/TO/llama-server MODEL.gguf [concurrency] [n] [rounds]}")
conc=${3:-1,4,16}
n=${4:-32}
rounds=${5:-2}
sides=${SIDES:-"ours1 llama1 ours2 llama2"}
OURS_ARGS=${OURS_ARGS:-}
LLAMA_ARGS=${LLAMA_ARGS:-}
slots=${SLOTS:-16}
ctx=${CTX:-128}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/gorun" "$root/cmd/gorun"
go build -o "$work/llm" "$root/cmd/llm"
port=$((18000 + RANDOM % 1000))

wait_up() {
	for _ in $(seq 600); do
		if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			cat "$work/server.log" >&2
			return 1
		fi
		sleep 0.5
	done
	return 1
}

# cpu_ticks PID: user+sys clock ticks of PID and its children (gorun's ranks), so far.
cpu_ticks() {
	local t=0 p
	for p in "$1" $(pgrep -P "$1"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}

for round in $(seq "$rounds"); do
	for side in $sides; do
		port=$((port + 1)) # a fresh port: the last server's may linger
		case $side in
		ours1) "$work/gorun" -n 1 "$work/llm" serve -m "$model" -t 1 --port "$port" --parallel "$slots" -c "$ctx" --queue 256 $OURS_ARGS >"$work/server.log" 2>&1 & ;;
		ours2) "$work/gorun" -n 2 "$work/llm" serve -m "$model" -t 1 --port "$port" --parallel "$slots" -c "$ctx" --queue 256 $OURS_ARGS >"$work/server.log" 2>&1 & ;;
		llama1) "$llama_server" -m "$model" -t 1 --port "$port" -np "$slots" -c $((slots * ctx)) --no-webui $LLAMA_ARGS >"$work/server.log" 2>&1 & ;;
		llama2) "$llama_server" -m "$model" -t 2 --port "$port" -np "$slots" -c $((slots * ctx)) --no-webui $LLAMA_ARGS >"$work/server.log" 2>&1 & ;;
		*) echo "unknown side $side" >&2; exit 2 ;;
		esac
		pid=$!
		wait_up
		echo "# round $round $side: $(uptime)" >&2
		"$work/llm" bench-serve --url "http://127.0.0.1:$port" --concurrency 1 --requests 1 -n "$n" -o json >/dev/null
		for c in ${conc//,/ }; do
			cpu0=$(cpu_ticks "$pid")
			"$work/llm" bench-serve --url "http://127.0.0.1:$port" --concurrency "$c" -n "$n" -o json --warmup=false >"$work/out.jsonl" ||
				echo "# round $round $side: bench-serve reported errors" >&2
			cpu=$(($(cpu_ticks "$pid") - cpu0))
			# server_cpu_s: CPU seconds (user+sys) of the server's processes for this level.
			sed "s/^{/{\"side\":\"$side\",\"round\":$round,\"server_cpu_s\":$(awk "BEGIN{print $cpu/$(getconf CLK_TCK)}"),/" "$work/out.jsonl"
		done
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		pid=
	done
done
