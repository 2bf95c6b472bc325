package topology

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// ProcNull stands for "no rank" (MPI_PROC_NULL): Shift returns it past the edge of a
// non-periodic dimension, and the neighbour collectives neither send to nor receive from it.
// comm's point-to-point calls do not accept it: test for it before a Send or Recv.
const ProcNull = -2

// Cart is a communicator whose ranks form a Cartesian grid (MPI_Cart_create): rank r has
// the coordinates of r in row-major order of Dims (the last dimension varies fastest).
// Its methods other than Sub do not communicate, and may be called from any goroutine; Sub
// and the neighbour collectives are collective, called by every rank in the same order.
type Cart struct {
	c       *comm.Comm
	dims    []int
	periods []bool
	coords  []int
	nb      neighborhood
}

// NewCart makes a Cartesian topology over c, collectively (every rank of c calls it with the
// same arguments). A zero in dims is chosen as DimsCreate does; the product of dims must be
// c.Size(). periods[d] makes dimension d wrap around (a ring, a torus); nil means none does.
// With reorder, ranks may be renumbered so that ranks on one host (Comm.HostID) are
// consecutive, which puts neighbours along the last dimension, and whole rows of it when the
// host's rank count is a multiple of its size, on one host; without it, rank r of c is rank r
// of the Cart. The Cart's communicators are new: c stays as it was.
func NewCart(c *comm.Comm, dims []int, periods []bool, reorder bool) (*Cart, error) {
	full, local := dims, error(nil)
	if periods != nil && len(periods) != len(dims) {
		local = fmt.Errorf("topology: NewCart: %d periods for %d dims", len(periods), len(dims))
	} else if d, err := DimsCreate(c.Size(), dims); err != nil {
		local = fmt.Errorf("topology: NewCart over %d ranks: %w", c.Size(), err)
	} else {
		full = d
	}
	per := make([]bool, len(full))
	if local == nil {
		copy(per, periods)
	}
	fp := []int{len(full)}
	fp = append(fp, full...)
	for _, p := range per {
		fp = append(fp, boolInt(p))
	}
	fp = append(fp, boolInt(reorder))
	if err := agree(c, "NewCart", local, fingerprint(fp...)); err != nil {
		return nil, err
	}
	var cc *comm.Comm
	var err error
	if reorder {
		cc, err = c.Split(0, hostOrder(c)[c.Rank()])
	} else {
		cc, err = c.Dup()
	}
	if err != nil {
		return nil, fmt.Errorf("topology: NewCart: %w", err)
	}
	return newCart(cc, full, per)
}

// hostOrder returns, for each rank of c, its position when ranks are grouped by host (hosts
// in order of their lowest rank, ranks ascending within a host).
func hostOrder(c *comm.Comm) []int {
	var hosts []string
	members := map[string][]int{}
	for r := 0; r < c.Size(); r++ {
		h := c.HostID(r)
		if _, ok := members[h]; !ok {
			hosts = append(hosts, h)
		}
		members[h] = append(members[h], r)
	}
	pos, k := make([]int, c.Size()), 0
	for _, h := range hosts {
		for _, r := range members[h] {
			pos[r] = k
			k++
		}
	}
	return pos
}

// newCart completes a Cart over cc, whose rank order is already the grid's: it duplicates cc
// for the neighbour collectives and lists the neighbours.
func newCart(cc *comm.Comm, dims []int, periods []bool) (*Cart, error) {
	nbc, err := cc.Dup()
	if err != nil {
		return nil, fmt.Errorf("topology: Cartesian communicator: %w", err)
	}
	t := &Cart{c: cc, dims: dims, periods: periods}
	t.coords = t.coordsOf(cc.Rank())
	n := len(dims)
	t.nb = neighborhood{c: nbc, cart: true,
		srcs: make([]int, 2*n), dsts: make([]int, 2*n),
		recvTags: make([]int, 2*n), sendTags: make([]int, 2*n)}
	for d := 0; d < n; d++ {
		lo, hi, _ := t.Shift(d, 1)
		// Slot 2d is the -1 neighbour, 2d+1 the +1 neighbour, for sending and receiving
		// alike. A message's tag is the slot it was sent from, so the block from the -1
		// neighbour is the one it sent towards +1 (tag 2d+1), even where both neighbours
		// are one rank.
		t.nb.srcs[2*d], t.nb.srcs[2*d+1] = lo, hi
		t.nb.dsts[2*d], t.nb.dsts[2*d+1] = lo, hi
		t.nb.sendTags[2*d], t.nb.sendTags[2*d+1] = 2*d, 2*d+1
		t.nb.recvTags[2*d], t.nb.recvTags[2*d+1] = 2*d+1, 2*d
	}
	return t, nil
}

// Comm is the Cartesian communicator, for the program's own messages and collectives in the
// grid's rank order.
func (t *Cart) Comm() *comm.Comm { return t.c }

// Rank is the calling rank in the Cart.
func (t *Cart) Rank() int { return t.c.Rank() }

// Size is the number of ranks, the product of Dims.
func (t *Cart) Size() int { return t.c.Size() }

// NDims is the number of dimensions.
func (t *Cart) NDims() int { return len(t.dims) }

// Dims returns the extent of each dimension (a copy).
func (t *Cart) Dims() []int { return append([]int(nil), t.dims...) }

// Periods returns which dimensions wrap around (a copy).
func (t *Cart) Periods() []bool { return append([]bool(nil), t.periods...) }

// Coords returns the calling rank's coordinates (a copy).
func (t *Cart) Coords() []int { return append([]int(nil), t.coords...) }

// CoordsOf returns the coordinates of rank r (MPI_Cart_coords).
func (t *Cart) CoordsOf(r int) ([]int, error) {
	if r < 0 || r >= t.Size() {
		return nil, fmt.Errorf("topology: CoordsOf: rank %d out of range [0, %d)", r, t.Size())
	}
	return t.coordsOf(r), nil
}

func (t *Cart) coordsOf(r int) []int {
	co := make([]int, len(t.dims))
	for d := len(t.dims) - 1; d >= 0; d-- {
		co[d] = r % t.dims[d]
		r /= t.dims[d]
	}
	return co
}

// RankOf returns the rank at coords (MPI_Cart_rank). A coordinate outside a periodic
// dimension wraps around; outside a non-periodic one it is an error.
func (t *Cart) RankOf(coords []int) (int, error) {
	if len(coords) != len(t.dims) {
		return 0, fmt.Errorf("topology: RankOf: %d coordinates for %d dims", len(coords), len(t.dims))
	}
	r := 0
	for d, x := range coords {
		n := t.dims[d]
		if x < 0 || x >= n {
			if !t.periods[d] {
				return 0, fmt.Errorf("topology: RankOf: coordinate %d of dim %d outside [0, %d), which is not periodic", x, d, n)
			}
			x = ((x % n) + n) % n
		}
		r = r*n + x
	}
	return r, nil
}

// Shift returns the ranks a displacement disp along dimension dim reaches (MPI_Cart_shift):
// dst is the rank disp steps forward of the caller, src the rank disp steps back, the one
// whose shift by disp reaches the caller. Past the edge of a non-periodic dimension either is
// ProcNull. A Sendrecv to dst from src moves data disp steps along dim.
func (t *Cart) Shift(dim, disp int) (src, dst int, err error) {
	if dim < 0 || dim >= len(t.dims) {
		return ProcNull, ProcNull, fmt.Errorf("topology: Shift: dimension %d out of range [0, %d)", dim, len(t.dims))
	}
	at := func(step int) int {
		co := append([]int(nil), t.coords...)
		co[dim] += step
		r, err := t.RankOf(co)
		if err != nil {
			return ProcNull
		}
		return r
	}
	return at(-disp), at(disp), nil
}

// Sub splits the grid into lower-dimensional grids (MPI_Cart_sub), collectively: the
// dimensions with remain[d] true are kept, and the ranks that share their coordinates in the
// others form one Cart. On a P x Q grid, Sub([]bool{false, true}) gives each rank its row
// (Q ranks) and Sub([]bool{true, false}) its column. A sub-grid's ranks keep their row-major
// order; with no dimension kept, each rank is a grid of its own with no dimensions.
func (t *Cart) Sub(remain []bool) (*Cart, error) {
	var local error
	if len(remain) != len(t.dims) {
		local = fmt.Errorf("topology: Sub: %d remain flags for %d dims", len(remain), len(t.dims))
	}
	fp := []int{len(remain)}
	for _, k := range remain {
		fp = append(fp, boolInt(k))
	}
	if err := agree(t.c, "Sub", local, fingerprint(fp...)); err != nil {
		return nil, err
	}
	color := 0
	var dims []int
	var periods []bool
	for d, keep := range remain {
		if keep {
			dims = append(dims, t.dims[d])
			periods = append(periods, t.periods[d])
		} else {
			color = color*t.dims[d] + t.coords[d]
		}
	}
	cc, err := t.c.Split(color, t.Rank())
	if err != nil {
		return nil, fmt.Errorf("topology: Sub: %w", err)
	}
	return newCart(cc, dims, periods)
}

// Neighbors returns the Cart's neighbour slots (see the package documentation for their
// order): sources and destinations are equal, ProcNull where there is no neighbour.
func (t *Cart) Neighbors() (sources, destinations []int) {
	return append([]int(nil), t.nb.srcs...), append([]int(nil), t.nb.dsts...)
}

func (t *Cart) neighborhood() *neighborhood { return &t.nb }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
