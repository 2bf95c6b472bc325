#!/usr/bin/env bash
# llm serve --pp 2 with overlapped steps against the same server stepping synchronously
# (--pp-sync), one after the other for ROUNDS rounds so that drift on a shared machine hits
# both sides. The client is llm bench-serve (streamed /v1/completions, temperature 0,
# ignore_eos, distinct prompts). Prints one JSON line per (side, round, concurrency) and
# `uptime` before each run.
#
#   bench/serve/pp.sh MODEL.gguf [concurrency] [n] [rounds]
#   bench/serve/pp.sh m.gguf 4,8 32 3
#
# RANKS (2) and PP (2) give the layout (PP stages of RANKS/PP ranks); THREADS (1) per rank.
set -euo pipefail
model=$(realpath "${1:?usage: pp.sh MODEL.gguf [concurrency] [n] [rounds]}")
conc=${2:-4,8}
n=${3:-32}
rounds=${4:-3}
ranks=${RANKS:-2}
pp=${PP:-2}
threads=${THREADS:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/gorun" "$root/cmd/gorun"
go build -o "$work/llm" "$root/cmd/llm"
port=$((19000 + RANDOM % 1000))
for round in $(seq "$rounds"); do
	for side in overlap sync; do
		port=$((port + 1))
		flag=
		[ "$side" = sync ] && flag=--pp-sync
		"$work/gorun" -n "$ranks" --oversubscribe "$work/llm" serve -m "$model" --pp "$pp" $flag -t "$threads" \
			--port "$port" --parallel 8 -c 256 --queue 256 >"$work/server.log" 2>&1 &
		pid=$!
		for _ in $(seq 600); do
			curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
			kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
			sleep 0.5
		done
		echo "# round $round $side: $(uptime)" >&2
		"$work/llm" bench-serve --url "http://127.0.0.1:$port" --concurrency 1 --requests 1 -n "$n" -o json >/dev/null
		for c in ${conc//,/ }; do
			"$work/llm" bench-serve --url "http://127.0.0.1:$port" --concurrency "$c" -n "$n" -o json --warmup=false |
				sed "s/^{/{\"side\":\"$side\",\"round\":$round,/"
		done
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		pid=
	done
done
