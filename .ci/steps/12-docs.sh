#!/usr/bin/env bash
# The commands of README.md and docs/*.md, run as a reader would: on a fresh clone of HEAD in a
# temporary folder with no ../shared beside it. Which blocks run, and how to mark one that
# cannot, is in docs/README.md ("Commands in the docs are tested"). DOCS_FILES limits the files.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

command -v curl >/dev/null || apt-get install -y --no-install-recommends curl >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-local "$repo" "$tmp/clone"
mkdir "$tmp/blocks" "$tmp/bin" "$tmp/cache"
cd "$tmp/clone"
echo "-- fresh clone of $(git rev-parse --short HEAD) in $tmp/clone (no ../shared)"

# shellcheck disable=SC2086
files=${DOCS_FILES:-$(ls README.md docs/*.md)}
python3 "$repo/.ci/lib/doc-blocks.py" "$tmp/blocks" $files >"$tmp/plan"
awk -F'\t' '$1 == "skip" { printf "   skipped %s: %s\n", $2, $3 }' "$tmp/plan"

export GOBIN="$tmp/bin" PATH="$tmp/bin:$PATH" GORUN_CACHE_DIR="$tmp/cache"
fail=0
while IFS=$'\t' read -r script file run skipped; do
	[ "$script" = skip ] && continue
	[ "$run" -gt 0 ] || continue
	echo "-- $file: $run block(s) run, $skipped skipped"
	start=$(date +%s)
	# Its own session, so that whatever the file leaves running (a server) is stopped with it;
	# 5 minutes a file.
	log="$tmp/blocks/$script.log"
	setsid timeout -k 10 300 bash -euo pipefail "$tmp/blocks/$script" </dev/null >"$log" 2>&1 &
	pid=$!
	rc=0
	wait "$pid" || rc=$?
	kill -TERM -- "-$pid" 2>/dev/null || true
	cat "$log"
	if [ "$rc" -ne 0 ]; then
		echo "FAIL $file: exit code $rc$([ "$rc" -eq 124 ] && echo ' (timed out after 300 s)')" >&2
		fail=1
	elif grep -aq '\.\.\.\.\.\. FAILED' "$log"; then
		# hpl, as netlib's xhpl, exits 0 when a residual check fails
		echo "FAIL $file: an HPL residual check printed FAILED" >&2
		fail=1
	else
		echo "   ok in $(($(date +%s) - start)) s"
	fi
done <"$tmp/plan"
exit "$fail"
