package collectives

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// TestOptionsNoCheck: the With forms without the argument check give the reference results at
// every size class (recursive doubling, Rabenseifner, ring), and a rank's own bad arguments
// are still reported on that rank.
func TestOptionsNoCheck(t *testing.T) {
	notInJob(t)
	o := Options{NoCheck: true}
	for p := 1; p <= 5; p++ {
		for _, n := range []int{1, 7, 3000, 300000} {
			run(t, p, func(c *comm.Comm) error {
				r := c.Rank()
				x := fill[float64](r, n, false)
				if err := AllreduceWith(c, nil, x, Sum[float64](), o); err != nil {
					return err
				}
				if err := equal(x, refReduce[float64]("Sum", 0, p, n)); err != nil {
					return fmt.Errorf("p=%d n=%d AllreduceWith: %v", p, n, err)
				}
				root := p - 1
				b := make([]int32, n)
				if r == root {
					b = fill[int32](root, n, false)
				}
				if err := BcastWith(c, b, root, o); err != nil {
					return err
				}
				if err := equal(b, fill[int32](root, n, false)); err != nil {
					return fmt.Errorf("p=%d n=%d BcastWith: %v", p, n, err)
				}
				in := fill[int64](r, n, false)
				var out []int64
				if r == 0 {
					out = make([]int64, n)
				}
				if err := ReduceWith(c, in, out, Max[int64](), 0, o); err != nil {
					return err
				}
				if r == 0 {
					if err := equal(out, refReduce[int64]("Max", 0, p, n)); err != nil {
						return fmt.Errorf("p=%d n=%d ReduceWith: %v", p, n, err)
					}
				}
				counts := make([]int, p)
				total := 0
				for q := range counts {
					counts[q] = (q*5 + n) % 7 // zeros included
					total += counts[q]
				}
				send := fill[float32](r, counts[r], false)
				recv := make([]float32, total)
				if err := AllgathervWith(c, send, recv, counts, nil, o); err != nil {
					return err
				}
				off := 0
				for q := range p {
					if err := equal(recv[off:off+counts[q]], fill[float32](q, counts[q], false)); err != nil {
						return fmt.Errorf("p=%d AllgathervWith block %d: %v", p, q, err)
					}
					off += counts[q]
				}
				// Every rank passes a recv that is too short: each reports it without communicating.
				if total > 0 {
					if err := AllgathervWith(c, send, recv[:total-1], counts, nil, o); err == nil {
						return fmt.Errorf("p=%d: AllgathervWith accepted a short recv", p)
					}
				}
				return nil
			})
		}
	}
}

// TestPrivateSpace: collective traffic never matches the program's own receives on the same
// communicator, even one posted for any source and any tag before the collectives run, and a
// Patient view kept in a variable works as a communicator of its own.
func TestPrivateSpace(t *testing.T) {
	notInJob(t)
	for p := 2; p <= 4; p++ {
		run(t, p, func(c *comm.Comm) error {
			r := c.Rank()
			got := make([]int, 1)
			req := comm.Irecv(c, got, comm.AnySource, comm.AnyTag)
			x := []int{r}
			for range 3 {
				if err := Allreduce(c, nil, x, Sum[int]()); err != nil {
					return err
				}
			}
			if err := Barrier(c); err != nil {
				return err
			}
			if err := comm.Send(c, []int{1000 + r}, (r+1)%p, 7); err != nil {
				return err
			}
			st, err := req.Wait()
			if err != nil {
				return err
			}
			if src := (r - 1 + p) % p; got[0] != 1000+src || st.Source != src || st.Tag != 7 {
				return fmt.Errorf("rank %d received %d from %d tag %d, want the user's %d from %d tag 7", r, got[0], st.Source, st.Tag, 1000+src, src)
			}
			pc := c.Patient()
			y := []int{r}
			if err := Allreduce(pc, nil, y, Sum[int]()); err != nil {
				return err
			}
			if want := p * (p - 1) / 2; y[0] != want {
				return fmt.Errorf("patient view: sum %d, want %d", y[0], want)
			}
			return nil
		})
	}
}
