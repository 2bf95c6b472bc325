#!/usr/bin/env bash
# Regenerates a kquant-tp-*.json reference of llama.cpp's greedy tokens and logits for a
# synthetic model (llm mkmodel, F16) quantized by `llm quantize` to each K/IQ preset.
# Usage: kquantref.sh OUT.json STEPS -- MKMODEL-FLAGS...
#   KQUANTREF: the kquantref binary (kquantref.c built against llama.cpp); LLM: an llm binary.
set -euo pipefail
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
	echo "usage: kquantref.sh OUT.json STEPS -- MKMODEL-FLAGS..." >&2
	exit 2
fi
out=$1 steps=$2
shift 3
prompt="1 300 17 42 99"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LLM" mkmodel --type f16 -o "$tmp/F16.gguf" "$@" >&2
{
	printf '{"mkmodel":"%s","prompt":[%s],"steps":%d,"presets":{' "$*" "${prompt// /,}" "$steps"
	sep=
	for p in Q4_K_M Q5_K_M Q6_K IQ4_XS Q3_K_M Q2_K; do
		"$LLM" quantize "$tmp/F16.gguf" "$tmp/$p.gguf" "$p" >&2
		printf '%s"%s":' "$sep" "$p"
		# shellcheck disable=SC2086
		"$KQUANTREF" "$tmp/$p.gguf" "$steps" $prompt
		sep=,
	done
	printf '}}\n'
} >"$out"
