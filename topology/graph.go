package topology

import (
	"fmt"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// DistGraph is a communicator whose ranks form a directed graph that each rank describes by
// its own edges (MPI_Dist_graph_create_adjacent): the ranks it receives from (sources) and
// sends to (destinations). Neighbour collectives receive one block per source and send one per
// destination, in the order given; an edge listed twice is two slots, matched in order.
type DistGraph struct {
	c  *comm.Comm
	nb neighborhood
}

// NewDistGraph makes a graph topology over c, collectively: each rank passes the ranks of c
// it receives from and sends to. Every edge must be listed by both ends, as often at each
// (rank a lists b among its destinations k times exactly when b lists a among its sources k
// times): otherwise, or with a rank out of range, every rank returns an error. Ranks keep
// their numbers; the DistGraph's communicators are new.
func NewDistGraph(c *comm.Comm, sources, destinations []int) (*DistGraph, error) {
	const op = "NewDistGraph"
	size := c.Size()
	var local error
	for _, l := range []struct {
		name  string
		ranks []int
	}{{"source", sources}, {"destination", destinations}} {
		for i, r := range l.ranks {
			if r < 0 || r >= size {
				local = fmt.Errorf("topology: %s: %s %d is rank %d, outside [0, %d)", op, l.name, i, r, size)
				break
			}
		}
		if local != nil {
			break
		}
	}
	// The first check: ranks in range, everywhere (the edge counts below index by rank).
	if err := agree(c, op, local, 0); err != nil {
		return nil, err
	}
	// The second: each rank tells each other how many edges it sends it, and compares with
	// the sources it listed.
	out, in := make([]int64, size), make([]int64, size)
	for _, d := range destinations {
		out[d]++
	}
	if err := collectives.Alltoall(c, out, in); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", op, err)
	}
	listed := make([]int64, size)
	for _, s := range sources {
		listed[s]++
	}
	for r := range listed {
		if listed[r] != in[r] {
			local = fmt.Errorf("topology: %s: rank %d lists rank %d among its sources %d times, but rank %d lists it among its destinations %d times",
				op, c.Rank(), r, listed[r], r, in[r])
			break
		}
	}
	if err := agree(c, op, local, 0); err != nil {
		return nil, err
	}
	gc, err := c.Dup()
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", op, err)
	}
	nbc, err := gc.Dup()
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", op, err)
	}
	// One tag for every message: messages between a pair of ranks match in the order sent,
	// and both ends list their shared edges in the same order.
	return &DistGraph{c: gc, nb: neighborhood{c: nbc,
		srcs: append([]int(nil), sources...), dsts: append([]int(nil), destinations...),
		recvTags: make([]int, len(sources)), sendTags: make([]int, len(destinations))}}, nil
}

// Comm is the graph's communicator, for the program's own messages.
func (g *DistGraph) Comm() *comm.Comm { return g.c }

// Rank is the calling rank.
func (g *DistGraph) Rank() int { return g.c.Rank() }

// Size is the number of ranks.
func (g *DistGraph) Size() int { return g.c.Size() }

// Neighbors returns the sources and destinations as given to NewDistGraph (copies).
func (g *DistGraph) Neighbors() (sources, destinations []int) {
	return append([]int(nil), g.nb.srcs...), append([]int(nil), g.nb.dsts...)
}

func (g *DistGraph) neighborhood() *neighborhood { return &g.nb }
