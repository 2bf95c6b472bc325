// Command workqueue balances irregular work with one-sided communication: rank 0's window
// holds the index of the next unclaimed chunk of tasks and the running total. Every rank,
// rank 0 included, claims a chunk by reading and advancing that index under an exclusive lock
// (passive target: rank 0 does nothing to serve it), works on it, and adds its result to the
// total with Accumulate under a shared lock. Fast ranks take more chunks than slow ones. The
// task is counting the steps of the Collatz sequence of each number in [1, n]: cheap for some
// numbers, long for others.
//
//	gorun -n 4 ./examples/workqueue --n 10000000 --chunk 10000
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/rma"
)

func main() {
	n := flag.Int64("n", 1_000_000, "tasks: the numbers 1..n")
	chunk := flag.Int64("chunk", 1000, "tasks claimed at once")
	flag.Parse()

	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "workqueue:", err)
		os.Exit(1)
	}
	start := time.Now()
	total, chunks, err := run(c, *n, *chunk)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workqueue: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("workqueue: numbers 1..%d in chunks of %d on %d ranks in %.3f s: %d Collatz steps in all; chunks per rank %v\n",
			*n, *chunk, c.Size(), time.Since(start).Seconds(), total, chunks)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue:", err)
		os.Exit(1)
	}
}

// steps is the number of Collatz steps from x down to 1.
func steps(x int64) int64 {
	s := int64(0)
	for x != 1 {
		if x%2 == 0 {
			x /= 2
		} else {
			x = 3*x + 1
		}
		s++
	}
	return s
}

// run works through the numbers 1..n and returns, on rank 0, the total of their steps and how
// many chunks each rank took.
func run(c *comm.Comm, n, chunk int64) (total int64, chunks []int64, err error) {
	if n < 1 || chunk < 1 {
		return 0, nil, fmt.Errorf("--n %d and --chunk %d: both must be at least 1", n, chunk)
	}
	// Rank 0 exposes [next chunk's first number, total]; the other ranks expose nothing.
	size := 0
	if c.Rank() == 0 {
		size = 2
	}
	w, err := rma.Allocate[int64](c, size)
	if err != nil {
		return 0, nil, err
	}
	if c.Rank() == 0 {
		w.Local()[0] = 1 // before any epoch, no other rank can access it
	}
	// The fence orders that write before every rank's first access; FenceEnd opens no fence
	// epoch, leaving the window to passive-target locks.
	if err := w.FenceEnd(); err != nil {
		return 0, nil, err
	}
	mine := int64(0)
	next := make([]int64, 1)
	for {
		// Claim [first, first+chunk): read and advance the index atomically.
		if err := w.Lock(0, rma.Exclusive); err != nil {
			return 0, nil, err
		}
		if err := w.Get(0, 0, next); err != nil {
			return 0, nil, err
		}
		first := next[0]
		next[0] += chunk
		if err := w.Put(0, 0, next); err != nil {
			return 0, nil, err
		}
		if err := w.Unlock(0); err != nil {
			return 0, nil, err
		}
		if first > n {
			break
		}
		sum := int64(0)
		for x := first; x < first+chunk && x <= n; x++ {
			sum += steps(x)
		}
		// Shared locks let every rank add at once; Accumulate's additions are atomic.
		if err := w.Lock(0, rma.Shared); err != nil {
			return 0, nil, err
		}
		if err := w.Accumulate(0, 1, []int64{sum}, collectives.Sum[int64]()); err != nil {
			return 0, nil, err
		}
		if err := w.Unlock(0); err != nil {
			return 0, nil, err
		}
		mine++
	}
	// The fence waits until every rank has finished: rank 0's total is complete after it.
	if err := w.FenceEnd(); err != nil {
		return 0, nil, err
	}
	if c.Rank() == 0 {
		total = w.Local()[1]
		chunks = make([]int64, c.Size())
	}
	if err := collectives.Gather(c, []int64{mine}, chunks, 0); err != nil {
		return 0, nil, err
	}
	return total, chunks, w.Free()
}
