#!/usr/bin/env bash
# The collectives suite again, with Run's goroutine ranks connected through the real network
# transports (each rank with its own sockets / shared-memory segments), so every collective is
# also tested over tcp and shm. comm's own tests already cover both, with real processes too.
set -euo pipefail
cd "$(dirname "$0")/../.."
for transport in shm tcp; do
	echo "-- collectives over $transport"
	GORUN_RUN_TRANSPORT=$transport go test -count=1 -timeout 20m ./collectives/
done
