package main

import (
	"errors"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

// The workload's closed forms hold on every rank count, the flood included: a run checks
// elements and returns no error.
func TestWorkloadChecksPass(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		cfg := config{duration: 50 * time.Millisecond, stallRank: n - 1, stallIter: 1,
			stallFor: 10 * time.Millisecond, floodMsgs: 4, floodLen: 100}
		err := comm.Run(n, func(c *comm.Comm) error {
			iters, checks, err := run(c, cfg)
			if err == nil && (iters < 3 || checks == 0) {
				t.Errorf("%d ranks: %d iterations, %d checks", n, iters, checks)
			}
			return err
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// A rank whose contribution is wrong (it believes it is at another iteration) makes the
// checks fail with MISMATCH, on every rank that receives the wrong data.
func TestWrongContributionIsCaught(t *testing.T) {
	for _, n := range []int{1000, 100_000} {
		err := comm.Run(3, func(c *comm.Comm) error {
			iter := 5
			if c.Rank() == 1 {
				iter = 6
			}
			_, err := step(c, iter, n)
			if !errors.Is(err, errMismatch) {
				t.Errorf("rank %d, %d elements: %v, want a MISMATCH", c.Rank(), n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
