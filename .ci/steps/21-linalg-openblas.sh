#!/usr/bin/env bash
# linalg: the optional cgo backend (-tags openblas) against Debian's
# OpenBLAS; the same tests (against gonum) must pass through it.
# Assumes `apt-get update` was done.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! echo '#include <cblas.h>' | gcc -E - >/dev/null 2>&1; then
	apt-get install -y --no-install-recommends libopenblas-dev gcc libc6-dev
fi
CGO_ENABLED=1 go vet -tags openblas ./linalg/...
CGO_ENABLED=1 go test -count=1 -tags openblas ./linalg/...
