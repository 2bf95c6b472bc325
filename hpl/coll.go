package hpl

import (
	"fmt"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// HPL does its own communication for what is HPL's own, as netlib's does: the panel
// broadcasts (ring, two-ring and spread-roll topologies) and the row swaps have patterns of
// their own, built here on point-to-point messages. Everything else (the pivot search, the
// diagonal block's broadcast, the solve's reductions, the checks) calls package collectives.

// Tags of HPL's point-to-point message kinds; the panel number is added to those that can
// overlap. Collectives use a message space of their own and take no tag.
const (
	tagSwapUp = 3 << 10 // rows of U to the diagonal process row
	tagSwapDn = 4 << 10 // displaced rows from the diagonal process row
	tagU      = 5 << 10 // U down the process column
	tagPanel  = 1 << 20 // panel broadcast along the process row, + panel number
)

// hot is for the collectives on the factorization's and solve's critical path (the pivot
// search once per column, the diagonal block once per panel): their arguments agree on every
// rank by construction (sizes follow from N, NB and the grid), so the argument check is skipped.
var hot = collectives.Options{NoCheck: true}

var (
	sumOp = collectives.Sum[float64]()
	maxOp = collectives.Max[float64]()
	// pivotOp keeps the candidate with the larger magnitude, the lower global row on a tie
	// (see maxLoc); commutative, and every rank ends with the same candidate.
	pivotOp = collectives.NewOp("hpl.pivot", true, func(in, inout []float64) { maxLoc(inout, in) })
	// firstFailureOp keeps the entry whose first element is larger.
	firstFailureOp = collectives.NewOp("hpl.firstFailure", true, func(in, inout []float64) { firstFailure(inout, in) })
)

func wrap(c *comm.Comm, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("hpl: %s (rank %d of %d): %w", what, c.Rank(), c.Size(), err)
}

// allMax and allSum reduce one value over c.
func allMax(c *comm.Comm, v float64) (float64, error) {
	b := []float64{v}
	err := collectives.Allreduce(c, nil, b, maxOp)
	return b[0], err
}

func allSum(c *comm.Comm, v float64) (float64, error) {
	b := []float64{v}
	err := collectives.Allreduce(c, nil, b, sumOp)
	return b[0], err
}

// reduceSumTo sums buf onto root (in place there; buf is left as it was elsewhere).
func reduceSumTo(c *comm.Comm, buf []float64, root int, o collectives.Options) error {
	if c.Rank() == root {
		return collectives.ReduceWith(c, nil, buf, sumOp, root, o)
	}
	return collectives.ReduceWith(c, buf, nil, sumOp, root, o)
}

// ring passes buf along ranks (ranks[0] holds it) in order, each forwarding to the next.
func ring(c *comm.Comm, buf []float64, ranks []int, tag int) error {
	me := c.Rank()
	for i, r := range ranks {
		if r != me {
			continue
		}
		if i > 0 {
			if _, err := comm.Recv(c, buf, ranks[i-1], tag); err != nil {
				return wrap(c, "ring broadcast", err)
			}
		}
		if i+1 < len(ranks) {
			if err := comm.Send(c, buf, ranks[i+1], tag); err != nil {
				return wrap(c, "ring broadcast", err)
			}
		}
		return nil
	}
	return nil
}

// spreadRoll broadcasts buf from ranks[0] to ranks by the bandwidth-reducing "long" scheme:
// the buffer is cut into len(ranks) pieces, spread by a binomial scatter, then rolled around
// the ring (an allgather) so that every rank ends with every piece.
func spreadRoll(c *comm.Comm, buf []float64, ranks []int, tag int) error {
	n := len(ranks)
	if n <= 1 {
		return nil
	}
	pos := -1
	for i, r := range ranks {
		if r == c.Rank() {
			pos = i
		}
	}
	if pos < 0 {
		return nil
	}
	piece := func(i int) []float64 { // piece i of n, balanced
		lo, hi := i*len(buf)/n, (i+1)*len(buf)/n
		return buf[lo:hi]
	}
	span := func(lo, hi int) []float64 { return buf[lo*len(buf)/n : hi*len(buf)/n] }
	// Spread: a range [lo, hi) of pieces held by position lo is halved, the upper half sent on.
	lo, hi := 0, n
	for hi-lo > 1 {
		mid := lo + (hi-lo+1)/2
		if pos < mid {
			if pos == lo {
				if err := comm.Send(c, span(mid, hi), ranks[mid], tag); err != nil {
					return wrap(c, "spread", err)
				}
			}
			hi = mid
		} else {
			if pos == mid {
				if _, err := comm.Recv(c, span(mid, hi), ranks[lo], tag); err != nil {
					return wrap(c, "spread", err)
				}
			}
			lo = mid
		}
	}
	// Roll: n-1 steps around the ring; at step s position p passes on piece p-s.
	next, prev := ranks[(pos+1)%n], ranks[(pos-1+n)%n]
	for s := 0; s < n-1; s++ {
		out, in := piece((pos-s+n)%n), piece((pos-s-1+2*n)%n)
		if _, err := comm.Sendrecv(c, out, next, tag, in, prev, tag); err != nil {
			return wrap(c, "roll", err)
		}
	}
	return nil
}

// bcastPanel broadcasts buf from root along the process row c with HPL's topology top.
func bcastPanel(c *comm.Comm, buf []float64, root int, top Topo, tag int) error {
	n := c.Size()
	if n == 1 {
		return nil
	}
	order := make([]int, n) // ranks in increasing-ring order from root
	for i := range order {
		order[i] = (root + i) % n
	}
	me := c.Rank()
	// The modified variants serve the next process column (the next panel's owner) first,
	// with a message of its own, and broadcast to the others without it.
	modified := top == Ring1M || top == Ring2M || top == LongM
	if modified && n > 2 {
		if me == root {
			if err := comm.Send(c, buf, order[1], tag); err != nil {
				return wrap(c, "panel broadcast", err)
			}
		} else if me == order[1] {
			_, err := comm.Recv(c, buf, root, tag)
			return wrap(c, "panel broadcast", err)
		}
		order = append([]int{root}, order[2:]...)
	}
	switch top {
	case Ring1, Ring1M:
		return ring(c, buf, order, tag)
	case Ring2, Ring2M:
		rest := order[1:]
		h := (len(rest) + 1) / 2
		if err := ring(c, buf, append([]int{root}, rest[:h]...), tag); err != nil {
			return err
		}
		return ring(c, buf, append([]int{root}, rest[h:]...), tag)
	default:
		return spreadRoll(c, buf, order, tag)
	}
}
