#!/usr/bin/env bash
# llm (gguf, quant, model, tp, sample, cmd/llm): checks beyond `go test ./...`:
#  - the pure-Go kernels (build tag noasm) pass the same tests as the assembly ones;
#  - the arm64 NEON kernels, under qemu-user: bit for bit their Go twins (the Q8_0 ones in
#    llama.cpp's lane order, dotQ8_0Lanes), the real TinyStories models' greedy tokens and the
#    upcycled MoE runs against llama.cpp (a few minutes emulated);
#  - end to end with real processes: `gorun -n 2` and `-n 4` of `llm generate` on the real
#    TinyStories model print llama.cpp's greedy text (skipped when ../shared/testdata is absent).
set -euo pipefail
cd "$(dirname "$0")/../.."
go test -tags noasm ./llm/quant ./llm/model ./llm/tp
if ! command -v qemu-aarch64-static >/dev/null; then
	apt-get install -y --no-install-recommends qemu-user-static
fi
GOARCH=arm64 go vet ./llm/quant ./llm/model
GOARCH=arm64 go test -count=1 -exec qemu-aarch64-static ./llm/quant ./llm/model
model=../shared/testdata/llm/stories260K.gguf
if [ -f "$model" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/llm" ./cmd/llm
	go build -o "$tmp/gorun" ./cmd/gorun
	want="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
	for n in 1 2 4; do
		got=$("$tmp/gorun" -n "$n" "$tmp/llm" generate -m "$model" -p "Once upon a time" -n 32 --quiet)
		if [ "$got" != "$want" ]; then
			echo "40-llm: gorun -n $n llm generate printed: $got" >&2
			exit 1
		fi
	done
else
	echo "40-llm: $model absent, end-to-end check skipped"
fi
echo "40-llm: ok"
