package topology

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// BenchmarkHalo compares a 2-D halo exchange (four neighbours on a periodic 2 x 2 grid of
// goroutine ranks; GORUN_RUN_TRANSPORT=shm or tcp puts them on those transports) done by one
// NeighborAlltoall with the same exchange written by hand with Irecv/Isend.
func BenchmarkHalo(b *testing.B) {
	if inJob() {
		b.Skip("goroutine ranks")
	}
	for _, n := range []int{64, 4096} {
		for _, how := range []string{"alltoall", "sendrecv"} {
			b.Run(fmt.Sprintf("%s/%d", how, n), func(b *testing.B) {
				b.SetBytes(int64(4 * n * 8))
				err := comm.Run(4, func(c *comm.Comm) error {
					cart, err := NewCart(c, []int{2, 2}, []bool{true, true}, false)
					if err != nil {
						return err
					}
					srcs, dsts := cart.Neighbors()
					send, recv := make([]float64, 4*n), make([]float64, 4*n)
					reqs := make([]*comm.Request, 0, 8)
					for i := 0; i < b.N; i++ {
						if how == "alltoall" {
							if err := NeighborAlltoall(cart, send, recv); err != nil {
								return err
							}
							continue
						}
						// By hand: slot s's block goes out with tag s and comes back from the
						// opposite slot's neighbour with tag s^1.
						reqs = reqs[:0]
						for s := range 4 {
							reqs = append(reqs, comm.Irecv(cart.Comm(), recv[s*n:(s+1)*n], srcs[s], s^1))
							reqs = append(reqs, comm.Isend(cart.Comm(), send[s*n:(s+1)*n], dsts[s], s))
						}
						if err := comm.WaitAll(reqs...); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
