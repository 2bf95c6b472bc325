#!/usr/bin/env bash
# llm/tokenizer: a short fuzzing run of both targets beyond their committed seed corpus
# (go test only replays the seeds): FuzzEncode (round trips on the real vocabularies in
# ../shared/testdata/llm, skipped when absent) and FuzzNew (vocabularies built from arbitrary
# bytes must be rejected with an error or tokenize without panicking).
set -euo pipefail
cd "$(dirname "$0")/../.."
for target in FuzzEncode FuzzNew; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime 15s ./llm/tokenizer
done
echo "40-llm-tokenizer: ok"
