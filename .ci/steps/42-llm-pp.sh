#!/usr/bin/env bash
# llm pipeline parallelism (--pp) end to end with real processes under gorun (a few seconds):
#  - the TinyStories model prints llama.cpp's greedy text at (PP, TP) = (1,1), (2,1), (4,1),
#    (2,2), and with a layer split by hand;
#  - unequal memory (--mem per rank): the layer split follows it (the stage lines say which);
#  - a random-weight mixture of experts (llm mkmodel): the same text at every layout;
#  - `llm serve --pp 2` answers a greedy completion with llama.cpp's text, and four concurrent
#    ones (their steps overlapping in the pipeline) each with one rank's `llm generate` text;
#    so does `llm serve --pp 2` over four ranks (TP 2 in each stage), whose /metrics counts
#    steps issued while another was in flight;
#  - a layout that does not fit the ranks fails on every rank, not a hang (staged copies for
#    pipeline layouts: 41-llm-stage.sh).
# Under CI=true a missing ../shared/testdata model fails the step; elsewhere it is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=../shared/testdata/llm/stories260K.gguf
if [ ! -f "$model" ]; then
	if [ "${CI:-}" = true ]; then
		echo "42-llm-pp: $model absent" >&2
		exit 1
	fi
	echo "42-llm-pp: $model absent, skipped"
	exit 0
fi
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/llm" ./cmd/llm
go build -o "$tmp/gorun" ./cmd/gorun
gorun() { timeout 120 "$tmp/gorun" --oversubscribe "$@"; }
want="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
for layout in "1 1" "2 2" "4 4" "4 2" "2 2 --layer-split 1,4"; do
	set -- $layout
	got=$(gorun -n "$1" "$tmp/llm" generate -m "$model" -p "Once upon a time" -n 32 --quiet --pp "$2" "${@:3}")
	if [ "$got" != "$want" ]; then
		echo "42-llm-pp: gorun -n $1 llm generate --pp $2 ${*:3} printed: $got" >&2
		exit 1
	fi
done

# Unequal memory: 5 layers over ranks of 3G and 1G are 4 and 1.
gorun -n 2 "$tmp/llm" generate -m "$model" -p "Once upon a time" -n 32 --pp 2 --mem 3G,1G >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "$want" ] || { echo "42-llm-pp: --mem 3G,1G printed: $(cat "$tmp/out")" >&2; exit 1; }
grep -q "stage 0: ranks 0-0, layers 0-3; stage 1: ranks 1-1, layers 4-4" "$tmp/err" || { echo "42-llm-pp: --mem 3G,1G split:" >&2; cat "$tmp/err" >&2; exit 1; }

# A mixture of experts with random weights: the same text at every layout.
"$tmp/llm" mkmodel --shape qwen3moe-tiny --type q8_0 --layers 4 -o "$tmp/moe.gguf" >/dev/null
ref=$("$tmp/llm" generate -m "$tmp/moe.gguf" -p "hello world" -n 16 --quiet)
for layout in "2 2" "4 4" "4 2"; do
	set -- $layout
	got=$(gorun -n "$1" "$tmp/llm" generate -m "$tmp/moe.gguf" -p "hello world" -n 16 --quiet --pp "$2")
	if [ "$got" != "$ref" ]; then
		echo "42-llm-pp: MoE at -n $1 --pp $2 printed: $got, one rank: $ref" >&2
		exit 1
	fi
done
# Uneven expert placement: 3,1 puts experts 0..5 of 8 on rank 0, the same text.
got=$(gorun -n 2 "$tmp/llm" generate -m "$tmp/moe.gguf" -p "hello world" -n 16 --quiet --expert-split 3,1)
[ "$got" = "$ref" ] || { echo "42-llm-pp: MoE --expert-split 3,1 printed: $got, one rank: $ref" >&2; exit 1; }
gorun -n 2 "$tmp/llm" bench -m "$tmp/moe.gguf" -p 16 -n 4 -r 1 --expert-split 3,1 >"$tmp/out" 2>&1
# ... and times the exchange: 4 layers x 2 allreduces x 5 timed forwards (one prefill, 4 decodes).
grep -q "rank 0: experts 0..5" "$tmp/out" && grep -q "rank 1: experts 6..7" "$tmp/out" &&
	grep -q "rank 1: exchange .* in 40 allreduces" "$tmp/out" ||
	{ echo "42-llm-pp: --expert-split 3,1 placement:" >&2; cat "$tmp/out" >&2; exit 1; }

# llm serve over two stages.
"$tmp/gorun" -n 2 "$tmp/llm" serve -m "$model" --port 0 --pp 2 --parallel 4 2>"$tmp/serve.log" &
pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/.* on \(http:\/\/[0-9.:]*\)$/\1/p' "$tmp/serve.log")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { echo "42-llm-pp: the server did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
grep -q "PP=2 x TP=1" "$tmp/serve.log"
text=$(curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
	-d '{"prompt":"Once upon a time","max_tokens":32,"temperature":0}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
if [ "Once upon a time$text" != "$want" ]; then
	echo "42-llm-pp: llm serve --pp 2 answered: $text" >&2
	exit 1
fi
# Four requests at once (kept in up to two steps in flight, each cut into micro-batches
# across the stages): each answer is one rank's `llm generate` text for its prompt.
prompts=("The little dog" "Tom and Sue went" "A big red ball" "Once upon a time")
refs=()
for i in 0 1 2 3; do
	refs+=("$("$tmp/llm" generate -m "$model" -p "${prompts[$i]}" -n 24 --quiet)")
done
concurrent() {
	local cpids=() i got
	for i in 0 1 2 3; do
		curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
			-d "{\"prompt\":\"${prompts[$i]}\",\"max_tokens\":24,\"temperature\":0}" >"$tmp/c$i" &
		cpids+=($!)
	done
	wait "${cpids[@]}"
	for i in 0 1 2 3; do
		got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$tmp/c$i")
		if [ "${prompts[$i]}$got" != "${refs[$i]}" ]; then
			echo "42-llm-pp: llm serve $1, concurrent request $i: $got; llm generate: ${refs[$i]}" >&2
			exit 1
		fi
	done
}
concurrent "--pp 2"
kill "$pid"
wait "$pid" || true
pid=

# Two stages of two ranks each (TP allreduces inside the stages while steps overlap).
"$tmp/gorun" -n 4 --oversubscribe "$tmp/llm" serve -m "$model" --port 0 --pp 2 --parallel 4 --metrics 2>"$tmp/serve.log" &
pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/.* on \(http:\/\/[0-9.:]*\)$/\1/p' "$tmp/serve.log")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { echo "42-llm-pp: the server did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
grep -q "PP=2 x TP=2" "$tmp/serve.log"
concurrent "-n 4 --pp 2"
# Steps overlapped (issued while another was in the pipeline); none is in flight now.
curl -s "$url/metrics" >"$tmp/metrics"
if ! grep -q '^gorun_llm_steps_in_flight 0$' "$tmp/metrics" || ! grep -q '^gorun_llm_overlapped_steps_total [1-9]' "$tmp/metrics"; then
	echo "42-llm-pp: /metrics after four concurrent requests:" >&2
	grep 'steps_in_flight\|overlapped_steps' "$tmp/metrics" >&2
	exit 1
fi
kill "$pid"
wait "$pid" || true
pid=

# Bad layouts: an error on every rank.
if gorun -n 4 "$tmp/llm" generate -m "$model" -n 2 --pp 3 2>"$tmp/err"; then
	echo "42-llm-pp: --pp 3 of 4 ranks ran" >&2
	exit 1
fi
[ "$(grep -c "does not divide the job's 4 ranks" "$tmp/err")" = 4 ]
if gorun -n 2 "$tmp/llm" generate -m "$model" -n 2 --pp 2 --layer-split 2,2 2>"$tmp/err"; then
	echo "42-llm-pp: a split of 4 layers ran on a model of 5" >&2
	exit 1
fi
[ "$(grep -c "want 2 stages of the model's 5 layers" "$tmp/err")" = 2 ]
echo "42-llm-pp: ok"
