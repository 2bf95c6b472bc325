//go:build linux

package collectives

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// TestAllreduceSmallShmAllocs: an 8-byte allreduce between two ranks over shared memory, with
// the check on and the op built in every call as programs write it, allocates nothing in the
// steady state (comm's fast receive and fastbox, this package's scratch and op table), and
// gives the sum. Counted over the whole process, hence the average over many calls.
func TestAllreduceSmallShmAllocs(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("counts allocations: not under -short or the race detector")
	}
	t.Setenv(comm.RunTransportVar, "shm")
	const runs = 2000
	err := comm.Run(2, func(c *comm.Comm) error {
		in, out := []float64{float64(c.Rank() + 1)}, make([]float64, 1)
		call := func() error {
			if err := Allreduce(c, in, out, Sum[float64]()); err != nil {
				return err
			}
			if out[0] != 3 {
				return fmt.Errorf("sum %v, want 3", out[0])
			}
			return nil
		}
		if c.Rank() == 1 {
			for range runs + 1 { // AllocsPerRun's warm-up call and its runs
				if err := call(); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		allocs := testing.AllocsPerRun(runs, func() {
			if e := call(); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
		if allocs >= 1 {
			return fmt.Errorf("%v allocations per 8-byte allreduce, want none", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
