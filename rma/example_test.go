package rma_test

import (
	"fmt"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/rma"
)

// A one-sided ring: inside a fence epoch each rank puts its rank number into its right
// neighbour's window; the closing fence makes every Put visible.
func ExampleAllocate() {
	err := comm.Run(4, func(c *comm.Comm) error {
		w, err := rma.Allocate[int](c, 1)
		if err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		right := (c.Rank() + 1) % c.Size()
		if err := w.Put(right, 0, []int{c.Rank()}); err != nil {
			return err
		}
		if err := w.FenceEnd(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("rank 0 got", w.Local()[0], "from its left neighbour")
		}
		return w.Free()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 0 got 3 from its left neighbour
}

// Create exposes a slice the program already has; Get reads another rank's part.
func ExampleCreate() {
	err := comm.Run(3, func(c *comm.Comm) error {
		mine := []float64{float64(10 * c.Rank()), float64(10*c.Rank() + 1)}
		w, err := rma.Create(c, mine)
		if err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		got := make([]float64, 2)
		if err := w.Get(2, 0, got); err != nil { // rank 2's elements
			return err
		}
		if err := w.FenceEnd(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("rank 2 exposes", got)
		}
		return w.Free()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 2 exposes [20 21]
}

// Accumulate with Sum: every rank adds into rank 0's histogram at once; element-wise, the
// additions are atomic.
func ExampleWin_Accumulate() {
	err := comm.Run(4, func(c *comm.Comm) error {
		w, err := rma.Allocate[int64](c, 3)
		if err != nil {
			return err
		}
		if err := w.Fence(); err != nil {
			return err
		}
		counts := []int64{1, int64(c.Rank()), 2}
		if err := w.Accumulate(0, 0, counts, collectives.Sum[int64]()); err != nil {
			return err
		}
		if err := w.FenceEnd(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println(w.Local())
		}
		return w.Free()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [4 6 8]
}

// Passive target: a counter on rank 0 that every rank increments under an exclusive lock,
// without rank 0 taking part; Get then Put is a read-modify-write the lock makes safe.
func ExampleWin_Lock() {
	err := comm.Run(4, func(c *comm.Comm) error {
		w, err := rma.Allocate[int](c, 1)
		if err != nil {
			return err
		}
		for range 5 {
			if err := w.Lock(0, rma.Exclusive); err != nil {
				return err
			}
			v := make([]int, 1)
			if err := w.Get(0, 0, v); err != nil {
				return err
			}
			v[0]++
			if err := w.Put(0, 0, v); err != nil {
				return err
			}
			if err := w.Unlock(0); err != nil {
				return err
			}
		}
		// The fence waits for every rank, so all increments are done before rank 0 reads.
		if err := w.Fence(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("counter:", w.Local()[0])
		}
		if err := w.FenceEnd(); err != nil {
			return err
		}
		return w.Free()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: counter: 20
}
