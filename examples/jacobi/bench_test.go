package main

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// BenchmarkSolve runs the solver on goroutine ranks for b.N iterations (no convergence test
// stops it), one op being one iteration: halo exchange, sweep and convergence Allreduce.
// GORUN_RUN_TRANSPORT=shm or tcp puts the ranks on those transports, each with its own
// sockets and segments, as separate processes would have; -cpuprofile then shows where an
// iteration's time goes.
func BenchmarkSolve(b *testing.B) {
	for _, n := range []int{64, 512} {
		for _, p := range []int{1, 2} {
			for _, halo := range []string{"alltoall", "sendrecv"} {
				b.Run(fmt.Sprintf("n=%d/p=%d/%s", n, p, halo), func(b *testing.B) {
					err := comm.Run(p, func(c *comm.Comm) error {
						_, err := solve(c, config{n: n, tol: 0, maxIter: b.N, halo: halo})
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}
