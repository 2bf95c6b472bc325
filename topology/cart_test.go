package topology

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// naiveGrid lists the coordinates of every rank of a row-major grid by counting, as an
// odometer does.
func naiveGrid(dims []int) [][]int {
	var all [][]int
	co := make([]int, len(dims))
	for {
		all = append(all, append([]int(nil), co...))
		d := len(dims) - 1
		for ; d >= 0; d-- {
			co[d]++
			if co[d] < dims[d] {
				break
			}
			co[d] = 0
		}
		if d < 0 {
			return all
		}
	}
}

// naiveShift walks disp steps from rank r along dim one at a time.
func naiveShift(grid [][]int, dims []int, periods []bool, r, dim, disp int) int {
	co := append([]int(nil), grid[r]...)
	step := 1
	if disp < 0 {
		step, disp = -1, -disp
	}
	for i := 0; i < disp; i++ {
		co[dim] += step
		if co[dim] == dims[dim] || co[dim] == -1 {
			if !periods[dim] {
				return ProcNull
			}
			co[dim] = (co[dim] + dims[dim]) % dims[dim]
		}
	}
	return slices.IndexFunc(grid, func(g []int) bool { return slices.Equal(g, co) })
}

// cartShapes are the grids tried at p ranks: every dims pattern with zeros, periodic or not,
// plus fixed shapes with dimensions of size 1 and 2 (a rank its own or both neighbours).
func cartShapes(p int) []struct {
	dims    []int
	periods []bool
} {
	type shape = struct {
		dims    []int
		periods []bool
	}
	s := []shape{
		{[]int{0}, []bool{false}}, {[]int{0}, []bool{true}},
		{[]int{0, 0}, []bool{false, false}}, {[]int{0, 0}, []bool{true, false}}, {[]int{0, 0}, []bool{true, true}},
		{[]int{0, 0, 0}, []bool{true, false, true}},
		{[]int{1, p}, []bool{true, true}}, {[]int{p, 1}, nil},
	}
	if p%2 == 0 {
		s = append(s, shape{[]int{2, 0}, []bool{true, true}}, shape{[]int{0, 2, 1}, []bool{false, true, true}})
	}
	return s
}

func TestCartCoordsShift(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			for _, sh := range cartShapes(p) {
				cart, err := NewCart(c, sh.dims, sh.periods, false)
				if err != nil {
					return err
				}
				dims, _ := DimsCreate(p, sh.dims)
				periods := make([]bool, len(dims))
				copy(periods, sh.periods)
				grid := naiveGrid(dims)
				where := fmt.Sprintf("dims %v periods %v", dims, periods)
				if !slices.Equal(cart.Dims(), dims) || !slices.Equal(cart.Periods(), periods) || cart.Size() != p || cart.NDims() != len(dims) {
					return fmt.Errorf("%s: cart has dims %v periods %v size %d", where, cart.Dims(), cart.Periods(), cart.Size())
				}
				if cart.Rank() != c.Rank() {
					return fmt.Errorf("%s: rank %d became %d without reorder", where, c.Rank(), cart.Rank())
				}
				if !slices.Equal(cart.Coords(), grid[cart.Rank()]) {
					return fmt.Errorf("%s: coords %v, want %v", where, cart.Coords(), grid[cart.Rank()])
				}
				for r, co := range grid {
					got, err := cart.CoordsOf(r)
					if err != nil || !slices.Equal(got, co) {
						return fmt.Errorf("%s: CoordsOf(%d) = %v, %v; want %v", where, r, got, err, co)
					}
					if rr, err := cart.RankOf(co); err != nil || rr != r {
						return fmt.Errorf("%s: RankOf(%v) = %d, %v; want %d", where, co, rr, err, r)
					}
				}
				for d := range dims {
					// RankOf wraps periodic coordinates and refuses others.
					co := cart.Coords()
					co[d] += 3 * dims[d]
					rr, err := cart.RankOf(co)
					if periods[d] && (err != nil || rr != cart.Rank()) {
						return fmt.Errorf("%s: RankOf(%v) = %d, %v; want %d", where, co, rr, err, cart.Rank())
					}
					if !periods[d] && err == nil {
						return fmt.Errorf("%s: RankOf(%v) outside a non-periodic dim gave no error", where, co)
					}
					for _, disp := range []int{-3, -1, 0, 1, 2, 5} {
						src, dst, err := cart.Shift(d, disp)
						wsrc := naiveShift(grid, dims, periods, cart.Rank(), d, -disp)
						wdst := naiveShift(grid, dims, periods, cart.Rank(), d, disp)
						if err != nil || src != wsrc || dst != wdst {
							return fmt.Errorf("%s: Shift(%d, %d) = %d, %d, %v; want %d, %d", where, d, disp, src, dst, err, wsrc, wdst)
						}
					}
				}
				if _, _, err := cart.Shift(len(dims), 1); err == nil {
					return fmt.Errorf("%s: Shift of a dimension out of range gave no error", where)
				}
				if _, err := cart.CoordsOf(p); err == nil {
					return fmt.Errorf("%s: CoordsOf(%d) gave no error", where, p)
				}
				// The Cart's communicator is a working one of its own.
				sum := []int64{0}
				if err := collectives.Allreduce(cart.Comm(), []int64{int64(cart.Rank())}, sum, collectives.Sum[int64]()); err != nil {
					return err
				}
				if sum[0] != int64(p*(p-1)/2) {
					return fmt.Errorf("%s: allreduce over the Cart: %d", where, sum[0])
				}
			}
			return nil
		})
	}
}

func TestCartSub(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			for _, dims := range [][]int{{0, 0}, {0, 0, 0}} {
				cart, err := NewCart(c, dims, make([]bool, len(dims)), false)
				if err != nil {
					return err
				}
				full := cart.Dims()
				grid := naiveGrid(full)
				for mask := 0; mask < 1<<len(full); mask++ {
					remain := make([]bool, len(full))
					for d := range remain {
						remain[d] = mask&(1<<d) != 0
					}
					sub, err := cart.Sub(remain)
					if err != nil {
						return err
					}
					// The naive sub-grid: the Cart ranks that share this rank's coordinates in
					// the dropped dimensions, in increasing order.
					var want []int
					me := grid[cart.Rank()]
					for r, co := range grid {
						same := true
						for d := range co {
							if !remain[d] && co[d] != me[d] {
								same = false
							}
						}
						if same {
							want = append(want, r)
						}
					}
					where := fmt.Sprintf("dims %v remain %v", full, remain)
					if sub.Size() != len(want) || sub.Rank() != slices.Index(want, cart.Rank()) {
						return fmt.Errorf("%s: sub rank %d of %d, want %d of %d", where, sub.Rank(), sub.Size(), slices.Index(want, cart.Rank()), len(want))
					}
					members := make([]int64, sub.Size())
					if err := collectives.Allgather(sub.Comm(), []int64{int64(cart.Rank())}, members); err != nil {
						return err
					}
					for i, m := range members {
						if int(m) != want[i] {
							return fmt.Errorf("%s: sub members %v, want %v", where, members, want)
						}
					}
					var wantCo []int
					for d, k := range remain {
						if k {
							wantCo = append(wantCo, me[d])
						}
					}
					if !slices.Equal(sub.Coords(), wantCo) && !(len(wantCo) == 0 && sub.NDims() == 0) {
						return fmt.Errorf("%s: sub coords %v, want %v", where, sub.Coords(), wantCo)
					}
				}
			}
			return nil
		})
	}
}

// TestCartReorder: with reorder, ranks on one host are consecutive in the Cart, in their
// order in c; on one host (goroutine ranks, or a job without fake hosts) nothing moves.
func TestCartReorder(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			cart, err := NewCart(c, []int{0, 0}, nil, true)
			if err != nil {
				return err
			}
			// Naive reference: walk the hosts in order of first appearance, and each host's
			// ranks in c's order.
			var want []int
			seen := map[string]bool{}
			for r := 0; r < p; r++ {
				h := c.HostID(r)
				if seen[h] {
					continue
				}
				seen[h] = true
				for q := r; q < p; q++ {
					if c.HostID(q) == h {
						want = append(want, q)
					}
				}
			}
			order := make([]int64, p)
			if err := collectives.Allgather(cart.Comm(), []int64{int64(c.Rank())}, order); err != nil {
				return err
			}
			for k := range want {
				if int(order[k]) != want[k] {
					return fmt.Errorf("cart rank order %v (ranks of c), want %v", order, want)
				}
				if cart.Comm().HostID(k) != c.HostID(want[k]) {
					return fmt.Errorf("cart rank %d's host %q, want %q", k, cart.Comm().HostID(k), c.HostID(want[k]))
				}
			}
			return nil
		})
	}
}

// TestCartBadArguments: every rank returns an error, never a hang; a rank whose own arguments
// were valid says that another rank's were not.
func TestCartBadArguments(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			expectErr := func(what string, err error, mismatch bool) error {
				if err == nil {
					return fmt.Errorf("%s: no error", what)
				}
				if mismatch && !errors.Is(err, collectives.ErrMismatch) {
					return fmt.Errorf("%s: %v does not wrap ErrMismatch", what, err)
				}
				return nil
			}
			// The same bad dims everywhere: every rank sees it itself.
			_, err := NewCart(c, []int{p + 1, 1}, nil, false)
			if e := expectErr("dims not multiplying to the size", err, false); e != nil {
				return e
			}
			if _, err := NewCart(c, []int{0, 0}, []bool{true}, false); expectErr("periods of the wrong length", err, false) != nil {
				return fmt.Errorf("periods of the wrong length: %v", err)
			}
			// One rank's bad dims: it reports its own error, the others ErrMismatch.
			last := c.Size() - 1
			dims := []int{0}
			if c.Rank() == last {
				dims = []int{-1}
			}
			_, err = NewCart(c, dims, nil, false)
			if e := expectErr("one rank's negative dim", err, c.Rank() != last); e != nil {
				return e
			}
			// Valid but different arguments on one rank.
			if p > 1 {
				periods := []bool{false}
				if c.Rank() == 0 {
					periods = []bool{true}
				}
				_, err = NewCart(c, []int{p}, periods, false)
				if e := expectErr("differing periods", err, true); e != nil {
					return e
				}
			}
			// Sub with the wrong number of flags on one rank.
			cart, err := NewCart(c, []int{0, 0}, nil, false)
			if err != nil {
				return err
			}
			remain := []bool{true, false}
			if c.Rank() == 0 {
				remain = []bool{true}
			}
			_, err = cart.Sub(remain)
			if e := expectErr("Sub flags", err, c.Rank() != 0); e != nil {
				return e
			}
			// The communicator still works after all this.
			_, err = cart.Sub([]bool{true, false})
			return err
		})
	}
}
