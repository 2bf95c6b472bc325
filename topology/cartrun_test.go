package topology

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// TestNeighborCartLargeBlocks: blocks above the eager limits (72 KB: more than shm's 16 KiB and
// the in-process 64 KiB), whose sends are still in flight when the next block is framed, on
// rings where both slots are one neighbour and on a 2 x 2 torus, against the naive reference.
func TestNeighborCartLargeBlocks(t *testing.T) {
	for _, p := range []int{2, 4} {
		spmd(t, p, func(c *comm.Comm) error {
			shapes := []struct {
				dims    []int
				periods []bool
			}{{[]int{p}, []bool{true}}, {[]int{p}, []bool{false}}}
			if p == 4 {
				shapes = append(shapes, struct {
					dims    []int
					periods []bool
				}{[]int{2, 2}, []bool{true, true}})
			}
			for _, sh := range shapes {
				cart, err := NewCart(c, sh.dims, sh.periods, false)
				if err != nil {
					return err
				}
				for range 2 { // the second call reuses the first one's frames
					if err := checkExchange(cart, cartExpect(cart.Dims(), cart.Periods(), cart.Rank()), 9000); err != nil {
						return fmt.Errorf("dims %v periods %v: %w", sh.dims, sh.periods, err)
					}
				}
			}
			return nil
		})
	}
}

// TestNeighborCartShmAllocs: the blocking neighbour collectives on the Jacobi example's grid
// of two ranks (2 x 1, rows of 64 and columns of 32 elements) over shared memory allocate
// nothing per call in the steady state, and deliver the neighbour's blocks of that call.
// Counted over the whole process, hence the average over many calls.
func TestNeighborCartShmAllocs(t *testing.T) {
	notInJob(t)
	if testing.Short() || raceOn {
		t.Skip("counts allocations: not under -short or the race detector")
	}
	t.Setenv(comm.RunTransportVar, "shm")
	const runs = 200
	err := comm.Run(2, func(c *comm.Comm) error {
		cart, err := NewCart(c, []int{2, 1}, []bool{false, false}, false)
		if err != nil {
			return err
		}
		me, peer := cart.Rank(), 1-cart.Rank()
		// Rank 0 receives in slot 1 (+1 along dimension 0) the block rank 1 sent from slot 0,
		// and rank 1 in slot 0 the block rank 0 sent from slot 1; the other slots are empty.
		mySlot, peerSlot := 1-me, me
		const rows, cols, an, gn = 32, 64, 5, 8
		counts := []int{cols, cols, rows, rows}
		displs := []int{0, cols, 2 * cols, 2*cols + rows}
		vsend, vrecv := make([]float64, 2*cols+2*rows), make([]float64, 2*cols+2*rows)
		asend, arecv := make([]int32, 4*an), make([]int32, 4*an)
		gsend, grecv := make([]float64, gn), make([]float64, 4*gn)
		for k := range vrecv {
			vrecv[k] = untouched
		}
		for k := range arecv {
			arecv[k] = untouched
		}
		for k := range grecv {
			grecv[k] = untouched
		}
		at := func(r, j, k, i int) float64 { return value(r, j, k) + float64(i)*1e6 }
		call := func(i int) error {
			for j := range 4 {
				for k := range counts[j] {
					vsend[displs[j]+k] = at(me, j, k, i)
				}
				for k := range an {
					asend[j*an+k] = int32(at(me, j, k, i))
				}
			}
			for k := range gn {
				gsend[k] = at(me, 99, k, i)
			}
			if err := NeighborAlltoallv(cart, vsend, counts, displs, vrecv, counts, displs); err != nil {
				return err
			}
			if err := NeighborAlltoall(cart, asend, arecv); err != nil {
				return err
			}
			if err := NeighborAllgather(cart, gsend, grecv); err != nil {
				return err
			}
			for s := range 4 {
				for k := range counts[s] {
					want := float64(untouched)
					if s == mySlot {
						want = at(peer, peerSlot, k, i)
					}
					if got := vrecv[displs[s]+k]; got != want {
						return fmt.Errorf("call %d: NeighborAlltoallv: rank %d slot %d element %d is %v, want %v", i, me, s, k, got, want)
					}
				}
				for k := range an {
					want := int32(untouched)
					if s == mySlot {
						want = int32(at(peer, peerSlot, k, i))
					}
					if got := arecv[s*an+k]; got != want {
						return fmt.Errorf("call %d: NeighborAlltoall: rank %d slot %d element %d is %v, want %v", i, me, s, k, got, want)
					}
				}
				for k := range gn {
					want := float64(untouched)
					if s == mySlot {
						want = at(peer, 99, k, i)
					}
					if got := grecv[s*gn+k]; got != want {
						return fmt.Errorf("call %d: NeighborAllgather: rank %d slot %d element %d is %v, want %v", i, me, s, k, got, want)
					}
				}
			}
			return nil
		}
		if me == 1 {
			for i := range runs + 1 { // AllocsPerRun's warm-up call and its runs
				if err := call(i); err != nil {
					return err
				}
			}
			return nil
		}
		var err2 error
		i := 0
		allocs := testing.AllocsPerRun(runs, func() {
			if e := call(i); e != nil && err2 == nil {
				err2 = e
			}
			i++
		})
		if err2 != nil {
			return err2
		}
		if allocs >= 1 {
			return fmt.Errorf("%v allocations per NeighborAlltoallv, NeighborAlltoall and NeighborAllgather, want none", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
