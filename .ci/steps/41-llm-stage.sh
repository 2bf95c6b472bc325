#!/usr/bin/env bash
# llm split / stage end to end with real processes (skipped when ../shared/testdata is absent):
#  - a model split by `llm split` generates llama.cpp's greedy text under gorun -n 2, opened
#    from its last part;
#  - `gorun -n 2 llm stage --each-rank` from a model that only rank 0 has: rank 1 receives its
#    shard over the job's transport; both generate from their staged copies; a second run
#    sends nothing; a job of another size refuses the copies.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=../shared/testdata/llm/stories260K.gguf
if [ ! -f "$model" ]; then
	if [ "${CI:-}" = true ]; then
		echo "41-llm-stage: $model absent" >&2
		exit 1
	fi
	echo "41-llm-stage: $model absent, skipped"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/llm" ./cmd/llm
go build -o "$tmp/gorun" ./cmd/gorun
want="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
check() { # label, output
	if [ "$2" != "$want" ]; then
		echo "41-llm-stage: $1 printed: $2" >&2
		exit 1
	fi
}
"$tmp/llm" split --split-max-size 300K "$model" "$tmp/split" >/dev/null
check "split model" "$("$tmp/gorun" -n 2 "$tmp/llm" generate -m "$tmp/split-00005-of-00005.gguf" -p "Once upon a time" -n 32 --quiet)"

ln -s "$(realpath "$model")" "$tmp/src0.gguf" # rank 0 has the model, rank 1 (src1.gguf) not
out=$("$tmp/gorun" -n 2 "$tmp/llm" stage --each-rank --quiet -m "$tmp/src{rank}.gguf" --to "$tmp/host{rank}")
echo "$out"
grep -q "rank 1: .*48 tensors, 0 already staged; 652544 bytes received" <<<"$out"
check "staged copies" "$("$tmp/gorun" -n 2 "$tmp/llm" generate -m "$tmp/host{rank}" -p "Once upon a time" -n 32 --quiet)"
out=$("$tmp/gorun" -n 2 "$tmp/llm" stage --each-rank --quiet -m "$tmp/src{rank}.gguf" --to "$tmp/host{rank}")
grep -q "rank 1: .*48 already staged; 0 bytes received" <<<"$out"
if "$tmp/gorun" -n 4 "$tmp/llm" generate -m "$tmp/host{rank}" -p "x" -n 2 --quiet 2>"$tmp/err"; then
	echo "41-llm-stage: TP=4 from a TP=2 staging ran" >&2
	exit 1
fi
grep -q "was staged for TP=2" "$tmp/err"
echo "41-llm-stage: ok"
