package hpl

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Grid is a P x Q process grid over the first P*Q ranks of a communicator (netlib's
// HPL_grid_init): All spans the grid, Row the process row (ranked by column), Col the process
// column (ranked by row).
type Grid struct {
	All, Row, Col *comm.Comm
	P, Q          int
	MyRow, MyCol  int
	Order         Order
}

// NewGrid builds the grid; it is collective over world. Ranks beyond P*Q get a nil Grid: they
// take no part in the tests, as in netlib HPL.
func NewGrid(world *comm.Comm, order Order, P, Q int) (*Grid, error) {
	if P < 1 || Q < 1 {
		return nil, fmt.Errorf("hpl: illegal grid %d x %d", P, Q)
	}
	if gridSize(P, Q) > world.Size() {
		return nil, fmt.Errorf("hpl: a %d x %d grid needs %d ranks, have %d", P, Q, P*Q, world.Size())
	}
	me := world.Rank()
	color := 0
	if me >= P*Q {
		color = comm.Undefined
	}
	all, err := world.Split(color, me)
	if err != nil {
		return nil, fmt.Errorf("hpl: grid communicator: %w", err)
	}
	if all == nil {
		return nil, nil
	}
	g := &Grid{All: all, P: P, Q: Q, Order: order}
	if order == RowMajor {
		g.MyRow, g.MyCol = me/Q, me%Q
	} else {
		g.MyRow, g.MyCol = me%P, me/P
	}
	if g.Row, err = all.Split(g.MyRow, g.MyCol); err != nil {
		return nil, fmt.Errorf("hpl: row communicator: %w", err)
	}
	if g.Col, err = all.Split(g.MyCol, g.MyRow); err != nil {
		return nil, fmt.Errorf("hpl: column communicator: %w", err)
	}
	return g, nil
}
