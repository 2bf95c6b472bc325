#!/usr/bin/env bash
# hpl end to end as a user runs it: `gorun -n 4 hpl` over real processes (TCP), netlib's
# smoke HPL.dat (every PFACT/RFACT/NBMIN, grids 2x2, 1x4, 4x1) compared line by line with
# netlib HPL 2.3's own output (times, dates, Gflops and residual digits masked), and a quick
# default-variant run that must print PASSED.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gorun" ./cmd/gorun
go build -o "$work/hpl" ./cmd/hpl

(cd "$work" && ./gorun -n 4 ./hpl -N 1200 --nb 64 >quick.out)
grep -q '^WR11C2R4 *1200 *64 *2 *2 ' "$work/quick.out"
grep -q '\.\.\.\.\.\. PASSED$' "$work/quick.out"

td=../shared/testdata/hpl
if [ -f "$td/smoke.HPL.dat" ]; then
	cp "$td/smoke.HPL.dat" "$work/HPL.dat"
	(cd "$work" && ./gorun -n 4 ./hpl >smoke.out)
	mask() {
		sed -E -e 's/^(WR[0-9A-Z]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+) .*/\1 <time> <gflops>/' \
			-e 's/(start|end) time +.*/\1 time <date>/' \
			-e 's/= +[0-9.e+-]+ \.\.\.\.\.\. /= <resid> ...... /' "$1"
	}
	lines=$(wc -l <"$work/smoke.out")
	mask "$work/smoke.out" >"$work/ours"
	mask "$td/smoke.netlib-2.3.out" | head -n "$lines" >"$work/netlib"
	diff -u "$work/netlib" "$work/ours"
	[ "$(grep -c '\.\.\.\.\.\. PASSED$' "$work/smoke.out")" = 864 ]
else
	echo "30-hpl: ../shared/testdata/hpl absent, smoke comparison skipped"
fi
echo "30-hpl: ok"
