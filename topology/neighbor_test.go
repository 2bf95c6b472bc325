package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// value is element k of the block rank r sends from slot j.
func value(r, j, k int) float64 { return float64(r*10000 + j*100 + k + 1) }

const untouched = -7

// expectation is the naive reference of a topology: for each receive slot, the sending rank
// and the send slot of that rank whose block lands there (-1: an empty slot).
type expectation struct {
	srcs, dsts []int
	fromSlot   []int
}

// cartExpect derives the neighbour slots of rank me of a grid from naiveShift.
func cartExpect(dims []int, periods []bool, me int) expectation {
	grid := naiveGrid(dims)
	var e expectation
	for d := range dims {
		lo := naiveShift(grid, dims, periods, me, d, -1)
		hi := naiveShift(grid, dims, periods, me, d, 1)
		e.srcs = append(e.srcs, lo, hi)
		e.dsts = append(e.dsts, lo, hi)
		// The -1 neighbour's block for us is the one it sent towards +1 (its slot 2d+1).
		e.fromSlot = append(e.fromSlot, 2*d+1, 2*d)
	}
	for i, s := range e.srcs {
		if s == ProcNull {
			e.fromSlot[i] = -1
		}
	}
	return e
}

// randomGraph gives every rank of p random destinations (repeats and self-edges included) and
// derives each rank's sources from them, shuffled; all ranks build the same graph from seed.
func randomGraph(p int, seed uint64) (srcs, dsts [][]int) {
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	dsts = make([][]int, p)
	srcs = make([][]int, p)
	for a := range dsts {
		for range rng.IntN(5) {
			dsts[a] = append(dsts[a], rng.IntN(p))
		}
	}
	for a := range dsts {
		for _, b := range dsts[a] {
			srcs[b] = append(srcs[b], a)
		}
	}
	for b := range srcs {
		rng.Shuffle(len(srcs[b]), func(i, j int) { srcs[b][i], srcs[b][j] = srcs[b][j], srcs[b][i] })
	}
	return srcs, dsts
}

// graphExpect matches the k-th time rank me lists a source s with the k-th time s lists me
// among its destinations.
func graphExpect(srcs, dsts [][]int, me int) expectation {
	e := expectation{srcs: srcs[me], dsts: dsts[me]}
	seen := map[int]int{}
	for _, s := range srcs[me] {
		k := seen[s]
		seen[s]++
		slot := -1
		for j, d := range dsts[s] {
			if d == me {
				if k == 0 {
					slot = j
					break
				}
				k--
			}
		}
		e.fromSlot = append(e.fromSlot, slot)
	}
	return e
}

// checkExchange runs NeighborAlltoall and NeighborAllgather with blocks of n elements, both
// blocking and as two overlapping non-blocking calls, and compares every receive block with
// the expectation.
func checkExchange(t Topology, e expectation, n int) error {
	me := t.Comm().Rank()
	srcs, dsts := t.Neighbors()
	if !slices.Equal(srcs, e.srcs) || !slices.Equal(dsts, e.dsts) {
		return fmt.Errorf("neighbours %v -> %v, want %v -> %v", srcs, dsts, e.srcs, e.dsts)
	}
	in, out := len(srcs), len(dsts)
	mk := func() (send, a2a, ag []float64, agSend []float64) {
		send = make([]float64, out*n)
		for j := range out {
			for k := range n {
				send[j*n+k] = value(me, j, k)
			}
		}
		agSend = make([]float64, n)
		for k := range n {
			agSend[k] = value(me, 99, k)
		}
		a2a, ag = make([]float64, in*n), make([]float64, in*n)
		for i := range a2a {
			a2a[i], ag[i] = untouched, untouched
		}
		return
	}
	verify := func(what string, recv []float64, allgather bool) error {
		for i := range in {
			for k := range n {
				want := float64(untouched)
				if e.fromSlot[i] >= 0 {
					j := e.fromSlot[i]
					if allgather {
						j = 99
					}
					want = value(e.srcs[i], j, k)
				}
				if got := recv[i*n+k]; got != want {
					return fmt.Errorf("%s, %d-element blocks: rank %d slot %d element %d is %v, want %v", what, n, me, i, k, got, want)
				}
			}
		}
		return nil
	}
	send, a2a, ag, agSend := mk()
	if err := NeighborAlltoall(t, send, a2a); err != nil {
		return err
	}
	if err := NeighborAllgather(t, agSend, ag); err != nil {
		return err
	}
	if err := verify("NeighborAlltoall", a2a, false); err != nil {
		return err
	}
	if err := verify("NeighborAllgather", ag, true); err != nil {
		return err
	}
	send, a2a, ag, agSend = mk()
	r1 := IneighborAlltoall(t, send, a2a)
	r2 := IneighborAllgather(t, agSend, ag)
	if err := comm.WaitAll(r1, r2); err != nil {
		return err
	}
	if err := verify("IneighborAlltoall", a2a, false); err != nil {
		return err
	}
	if err := verify("IneighborAllgather", ag, true); err != nil {
		return err
	}
	// Alltoallv with the blocks reversed in the buffers and a gap after each.
	vsend, vrecv := make([]float64, out*(n+1)), make([]float64, in*(n+1))
	scounts, sdispls := make([]int, out), make([]int, out)
	rcounts, rdispls := make([]int, in), make([]int, in)
	for j := range out {
		scounts[j], sdispls[j] = n, (out-1-j)*(n+1)
		for k := range n {
			vsend[sdispls[j]+k] = value(me, j, k)
		}
	}
	for i := range vrecv {
		vrecv[i] = untouched
	}
	for i := range in {
		rcounts[i], rdispls[i] = n, (in-1-i)*(n+1)
	}
	if err := NeighborAlltoallv(t, vsend, scounts, sdispls, vrecv, rcounts, rdispls); err != nil {
		return err
	}
	flat := make([]float64, in*n)
	for i := range in {
		copy(flat[i*n:(i+1)*n], vrecv[rdispls[i]:rdispls[i]+n])
		if vrecv[rdispls[i]+n] != untouched {
			return fmt.Errorf("NeighborAlltoallv wrote past block %d", i)
		}
	}
	return verify("NeighborAlltoallv", flat, false)
}

func TestNeighborCollectivesCart(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			for _, sh := range cartShapes(p) {
				cart, err := NewCart(c, sh.dims, sh.periods, false)
				if err != nil {
					return err
				}
				for _, n := range []int{0, 1, 3, 1000} {
					if err := checkExchange(cart, cartExpect(cart.Dims(), cart.Periods(), cart.Rank()), n); err != nil {
						return fmt.Errorf("dims %v periods %v: %w", cart.Dims(), cart.Periods(), err)
					}
				}
			}
			return nil
		})
	}
}

func TestNeighborCollectivesGraph(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			for seed := range uint64(4) {
				srcs, dsts := randomGraph(p, seed)
				g, err := NewDistGraph(c, srcs[c.Rank()], dsts[c.Rank()])
				if err != nil {
					return err
				}
				if g.Size() != p || g.Rank() != c.Rank() {
					return fmt.Errorf("graph rank %d of %d", g.Rank(), g.Size())
				}
				for _, n := range []int{0, 2, 257} {
					if err := checkExchange(g, graphExpect(srcs, dsts, c.Rank()), n); err != nil {
						return fmt.Errorf("graph %v -> %v (seed %d): %w", srcs, dsts, seed, err)
					}
				}
			}
			return nil
		})
	}
}

// TestNeighborBadArguments: a rank whose buffers do not fit, or whose block size differs from
// its neighbours', fails with every neighbour next to it, without a hang; the topology works
// for the next call.
func TestNeighborBadArguments(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			cart, err := NewCart(c, []int{0}, []bool{true}, false)
			if err != nil {
				return err
			}
			bad := p / 2
			srcs, _ := cart.Neighbors()
			nextToBad := slices.Contains(srcs, bad)
			expect := func(what string, err error, fails bool) error {
				switch {
				case fails && err == nil:
					return fmt.Errorf("%s: rank %d (bad rank %d) got no error", what, c.Rank(), bad)
				case !fails && err != nil:
					return fmt.Errorf("%s: rank %d, not next to bad rank %d: %v", what, c.Rank(), bad, err)
				case fails && c.Rank() != bad && !errors.Is(err, collectives.ErrMismatch):
					return fmt.Errorf("%s: rank %d: %v does not wrap ErrMismatch", what, c.Rank(), err)
				}
				return nil
			}
			// A receive buffer that is not a whole number of blocks on one rank.
			send, recv := make([]int32, 2*4), make([]int32, 2*4)
			if c.Rank() == bad {
				recv = recv[:7]
			}
			if e := expect("short receive buffer", NeighborAlltoall(cart, send, recv), c.Rank() == bad || nextToBad); e != nil {
				return e
			}
			// Consistent buffers of another block size on one rank.
			n := 4
			if c.Rank() == bad {
				n = 5
			}
			err = NeighborAllgather(cart, make([]int32, n), make([]int32, 2*n))
			// Alone (p = 1), the bad rank is consistent with itself.
			differs := p > 1 && (c.Rank() == bad || nextToBad)
			if e := expect("another block size", err, differs); e != nil {
				return e
			}
			// Another element type of another size on one rank.
			if c.Rank() == bad {
				err = NeighborAlltoall(cart, make([]int64, 2), make([]int64, 2))
			} else {
				err = NeighborAlltoall(cart, make([]int32, 2), make([]int32, 2))
			}
			if e := expect("another element type", err, differs); e != nil {
				return e
			}
			// Bad v-counts on one rank.
			counts := []int{1, 1}
			if c.Rank() == bad {
				counts = []int{1, 3}
			}
			err = NeighborAlltoallv(cart, make([]int32, 2), counts, []int{0, 1}, make([]int32, 2), []int{1, 1}, []int{0, 1})
			if e := expect("alltoallv counts", err, c.Rank() == bad || nextToBad); e != nil {
				return e
			}
			// Afterwards the topology works.
			return checkExchange(cart, cartExpect(cart.Dims(), cart.Periods(), cart.Rank()), 3)
		})
	}
}

func TestDistGraphBadArguments(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			me := c.Rank()
			check := func(what string, err error, own bool) error {
				if err == nil {
					return fmt.Errorf("%s: rank %d: no error", what, me)
				}
				if !own && !errors.Is(err, collectives.ErrMismatch) {
					return fmt.Errorf("%s: rank %d: %v does not wrap ErrMismatch", what, me, err)
				}
				return nil
			}
			// A destination out of range on rank 0.
			var dsts []int
			if me == 0 {
				dsts = []int{p}
			}
			_, err := NewDistGraph(c, nil, dsts)
			if e := check("destination out of range", err, me == 0); e != nil {
				return e
			}
			// Rank 0 sends to the last rank, which does not list it as a source.
			dsts = nil
			if me == 0 {
				dsts = []int{p - 1}
			}
			_, err = NewDistGraph(c, nil, dsts)
			if e := check("unlisted edge", err, me == p-1); e != nil {
				return e
			}
			// A ring, valid: it still works after the failures.
			g, err := NewDistGraph(c, []int{(me + p - 1) % p}, []int{(me + 1) % p})
			if err != nil {
				return err
			}
			recv := []int64{-1}
			if err := NeighborAllgather(g, []int64{int64(me)}, recv); err != nil {
				return err
			}
			if recv[0] != int64((me+p-1)%p) {
				return fmt.Errorf("ring: rank %d got %d", me, recv[0])
			}
			return nil
		})
	}
}

// TestNeighborPeerGone: a neighbour that has left makes the exchange fail with a PeerError
// naming it, instead of hanging.
func TestNeighborPeerGone(t *testing.T) {
	notInJob(t)
	spmd(t, 3, func(c *comm.Comm) error {
		ring, err := NewCart(c, []int{3}, []bool{true}, false)
		if err != nil {
			return err
		}
		if ring.Rank() == 2 {
			return nil // leaves without taking part
		}
		err = NeighborAlltoall(ring, make([]float64, 2), make([]float64, 2))
		var pe *comm.PeerError
		if !errors.As(err, &pe) || pe.Rank != c.WorldRank(2) {
			return fmt.Errorf("rank %d: %v, want a PeerError naming rank 2", ring.Rank(), err)
		}
		return nil
	})
}
