// Package tp connects llm/model's tensor parallelism to package comm: Group implements
// model.Group (allreduce-sum and allgatherv of float32) with package collectives.
//
// Every rank ends an allreduce with bit-identical values (collectives.Allreduce guarantees it),
// so ranks never disagree on a sampled token.
package tp

import (
	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// Group is a tensor-parallel group over a communicator.
type Group struct {
	c   *comm.Comm
	sum collectives.Op[float32]
}

// opts: every rank runs the same model with the same shapes, so the arguments agree by
// construction and the collectives' argument check would only add work to each call.
var opts = collectives.Options{NoCheck: true}

// New returns the group of all ranks of c.
func New(c *comm.Comm) *Group { return &Group{c: c, sum: collectives.Sum[float32]()} }

// Rank returns this rank's index in the group.
func (g *Group) Rank() int { return g.c.Rank() }

// Size returns the number of ranks.
func (g *Group) Size() int { return g.c.Size() }

// AllreduceSum sums x over the ranks, in place, on every rank.
func (g *Group) AllreduceSum(x []float32) error {
	if g.c.Size() == 1 {
		return nil
	}
	return collectives.AllreduceWith(g.c, nil, x, g.sum, opts)
}

// Allgatherv concatenates every rank's send (counts[r] values from rank r) into recv on every
// rank, packed in rank order.
func (g *Group) Allgatherv(send, recv []float32, counts []int) error {
	return collectives.AllgathervWith(g.c, send, recv, counts, nil, opts)
}
