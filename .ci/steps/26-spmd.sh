#!/usr/bin/env bash
# topology and the SPMD examples: the race detector over the topology suite, the suite in real
# processes at every rank count 1-8 over shm and tcp and over fake hosts (rank reordering),
# and every example as processes under gorun at 1, 2, 3 and 4 ranks over both shm and tcp.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "-- go test -race -short ./topology"
go test -count=1 -race -short ./topology
echo "-- the topology suite in processes: 1-8 ranks over shm and tcp, fake hosts"
GORUN_TOPO_PROC_MATRIX=full go test -count=1 -v -run TestSuiteInProcesses ./topology
echo "-- the examples at 1-4 ranks over shm and tcp"
GORUN_EXAMPLES_MATRIX=full go test -count=1 -v -run TestProgram ./examples/...
