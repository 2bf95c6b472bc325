package hpl

import (
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/comm"
)

// HPL does its own communication on point-to-point messages, as netlib's does: the panel
// broadcasts, the pivot search and the row swaps have patterns of their own. These are the
// small building blocks, each over one communicator (a process row or column).

// Tags of the message kinds; the panel number is added to those that can overlap.
const (
	tagPivot  = 1 << 10 // pivot search (MaxLoc with the pivot row)
	tagDiag   = 2 << 10 // the panel's diagonal block, down the process column
	tagSwapUp = 3 << 10 // rows of U to the diagonal process row
	tagSwapDn = 4 << 10 // displaced rows from the diagonal process row
	tagU      = 5 << 10 // U down the process column
	tagSolve  = 6 << 10 // back substitution
	tagCheck  = 7 << 10 // residual check reductions
	tagPanel  = 1 << 20 // panel broadcast along the process row, + panel number
)

func wrap(c *comm.Comm, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("hpl: %s (rank %d of %d): %w", what, c.Rank(), c.Size(), err)
}

// bcastTree broadcasts buf from root with a binomial tree.
func bcastTree(c *comm.Comm, buf []float64, root, tag int) error {
	n := c.Size()
	if n == 1 {
		return nil
	}
	rel := (c.Rank() - root + n) % n
	mask := 1
	for mask < n {
		if rel&mask != 0 {
			src := (rel - mask + root) % n
			if _, err := comm.Recv(c, buf, src, tag); err != nil {
				return wrap(c, "tree broadcast", err)
			}
			break
		}
		mask <<= 1
	}
	mask >>= 1
	for ; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := comm.Send(c, buf, (rel+mask+root)%n, tag); err != nil {
				return wrap(c, "tree broadcast", err)
			}
		}
	}
	return nil
}

// allreduce combines buf over c with op (commutative, and deterministic for a given pair, so
// that every rank ends with the same bits) by recursive doubling; a non-power-of-two count
// folds the extra ranks in first. scratch has len(buf).
func allreduce(c *comm.Comm, buf, scratch []float64, tag int, op func(acc, in []float64)) error {
	n, me := c.Size(), c.Rank()
	if n == 1 {
		return nil
	}
	pof2 := 1
	for pof2*2 <= n {
		pof2 *= 2
	}
	rem := n - pof2
	newRank := me - rem
	if me < 2*rem {
		if me%2 == 0 {
			if err := comm.Send(c, buf, me+1, tag); err != nil {
				return wrap(c, "allreduce", err)
			}
			newRank = -1
		} else {
			if _, err := comm.Recv(c, scratch, me-1, tag); err != nil {
				return wrap(c, "allreduce", err)
			}
			op(buf, scratch)
			newRank = me / 2
		}
	}
	if newRank >= 0 {
		for mask := 1; mask < pof2; mask <<= 1 {
			pn := newRank ^ mask
			peer := pn + rem
			if pn < rem {
				peer = pn*2 + 1
			}
			if _, err := comm.Sendrecv(c, buf, peer, tag, scratch, peer, tag); err != nil {
				return wrap(c, "allreduce", err)
			}
			op(buf, scratch)
		}
	}
	if me < 2*rem {
		if me%2 == 1 {
			if err := comm.Send(c, buf, me-1, tag); err != nil {
				return wrap(c, "allreduce", err)
			}
		} else if _, err := comm.Recv(c, buf, me+1, tag); err != nil {
			return wrap(c, "allreduce", err)
		}
	}
	return nil
}

func opSum(acc, in []float64) {
	for i, v := range in {
		acc[i] += v
	}
}

func opMax(acc, in []float64) {
	for i, v := range in {
		acc[i] = math.Max(acc[i], v)
	}
}

// allSum and allMax reduce one value over c.
func allSum(c *comm.Comm, v float64, tag int) (float64, error) {
	b, s := []float64{v}, []float64{0}
	err := allreduce(c, b, s, tag, opSum)
	return b[0], err
}

func allMax(c *comm.Comm, v float64, tag int) (float64, error) {
	b, s := []float64{v}, []float64{0}
	err := allreduce(c, b, s, tag, opMax)
	return b[0], err
}

// reduceSum sums buf onto root with a binomial tree; scratch has len(buf). Only root's buf
// holds the sum afterwards.
func reduceSum(c *comm.Comm, buf, scratch []float64, root, tag int) error {
	n := c.Size()
	if n == 1 {
		return nil
	}
	rel := (c.Rank() - root + n) % n
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			return wrap(c, "reduce", comm.Send(c, buf, (rel-mask+root)%n, tag))
		}
		if rel+mask < n {
			if _, err := comm.Recv(c, scratch, (rel+mask+root)%n, tag); err != nil {
				return wrap(c, "reduce", err)
			}
			opSum(buf, scratch)
		}
	}
	return nil
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
