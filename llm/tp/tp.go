// Package tp connects llm/model's tensor parallelism to package comm: Group implements
// model.Group (allreduce-sum and allgatherv of float32) with point-to-point messages on the
// communicator's collective message space.
//
// Every rank ends an allreduce with bit-identical values (recursive doubling adds the same two
// partial sums on both partners, and float addition is commutative; the ring reduces each
// chunk once and then copies it), so ranks never disagree on a sampled token.
package tp

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Group is a tensor-parallel group over a communicator.
type Group struct {
	c    *comm.Comm // collective space of the caller's communicator
	tmp  []float32
	blks []int
}

// New returns the group of all ranks of c.
func New(c *comm.Comm) *Group { return &Group{c: c.Coll()} }

// Rank returns this rank's index in the group.
func (g *Group) Rank() int { return g.c.Rank() }

// Size returns the number of ranks.
func (g *Group) Size() int { return g.c.Size() }

// ringMin is the vector length from which the ring (bandwidth-optimal, 2(p-1) steps) beats
// recursive doubling (log2 p steps of the whole vector).
const ringMin = 1 << 14

// AllreduceSum sums x over the ranks, in place, on every rank.
func (g *Group) AllreduceSum(x []float32) error {
	p := g.Size()
	if p == 1 {
		return nil
	}
	tag := g.c.NextCollTag()
	if p&(p-1) == 0 && len(x) < ringMin*p {
		return g.doubling(x, tag)
	}
	return g.ring(x, tag)
}

func (g *Group) buf(n int) []float32 {
	if cap(g.tmp) < n {
		g.tmp = make([]float32, n)
	}
	return g.tmp[:n]
}

func (g *Group) doubling(x []float32, tag int) error {
	r := g.Rank()
	t := g.buf(len(x))
	for mask := 1; mask < g.Size(); mask <<= 1 {
		peer := r ^ mask
		if _, err := comm.Sendrecv(g.c, x, peer, tag, t, peer, tag); err != nil {
			return fmt.Errorf("tp: allreduce with rank %d: %w", peer, err)
		}
		for i, v := range t {
			x[i] += v
		}
	}
	return nil
}

// ring: reduce-scatter then allgather around the ring; chunk k ends fully reduced on rank
// (k-1) mod p and is passed on unchanged.
func (g *Group) ring(x []float32, tag int) error {
	p, r := g.Size(), g.Rank()
	n := len(x)
	lo := func(k int) int { return n * ((k%p + p) % p) / p }
	hi := func(k int) int { return n * ((k%p+p)%p + 1) / p }
	next, prev := (r+1)%p, (r-1+p)%p
	t := g.buf(n/p + 1)
	for s := 0; s < p-1; s++ {
		sk, rk := r-s, r-s-1
		recv := t[:hi(rk)-lo(rk)]
		if _, err := comm.Sendrecv(g.c, x[lo(sk):hi(sk)], next, tag, recv, prev, tag); err != nil {
			return fmt.Errorf("tp: allreduce ring (rank %d -> %d, from %d): %w", r, next, prev, err)
		}
		dst := x[lo(rk):hi(rk)]
		for i, v := range recv {
			dst[i] += v
		}
	}
	for s := 0; s < p-1; s++ {
		sk, rk := r+1-s, r-s
		if _, err := comm.Sendrecv(g.c, x[lo(sk):hi(sk)], next, tag, x[lo(rk):hi(rk)], prev, tag); err != nil {
			return fmt.Errorf("tp: allreduce ring gather (rank %d -> %d, from %d): %w", r, next, prev, err)
		}
	}
	return nil
}

// Allgatherv concatenates every rank's send (counts[r] values from rank r) into recv on every
// rank, around a ring.
func (g *Group) Allgatherv(send, recv []float32, counts []int) error {
	p, r := g.Size(), g.Rank()
	if len(counts) != p {
		return fmt.Errorf("tp: allgatherv: %d counts for %d ranks", len(counts), p)
	}
	if len(send) != counts[r] {
		return fmt.Errorf("tp: allgatherv: rank %d sends %d values, counts say %d", r, len(send), counts[r])
	}
	if cap(g.blks) < p+1 {
		g.blks = make([]int, p+1)
	}
	off := g.blks[:p+1]
	off[0] = 0
	for i, c := range counts {
		off[i+1] = off[i] + c
	}
	if len(recv) < off[p] {
		return fmt.Errorf("tp: allgatherv: recv holds %d values, need %d", len(recv), off[p])
	}
	copy(recv[off[r]:off[r+1]], send)
	if p == 1 {
		return nil
	}
	tag := g.c.NextCollTag()
	next, prev := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		sk, rk := (r-s+p)%p, (r-s-1+p)%p
		if _, err := comm.Sendrecv(g.c, recv[off[sk]:off[sk+1]], next, tag, recv[off[rk]:off[rk+1]], prev, tag); err != nil {
			return fmt.Errorf("tp: allgather (rank %d -> %d, from %d): %w", r, next, prev, err)
		}
	}
	return nil
}
