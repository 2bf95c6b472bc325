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

// BenchmarkHaloJacobi is the halo exchange of examples/jacobi at 2 ranks (a 2 x 1 grid, not
// periodic, each rank a 32 x 64 block): NeighborAlltoallv with rows of 64 and columns of 32
// elements, against the same exchange written with Irecv/Isend. One op is one exchange on
// each rank; GORUN_RUN_TRANSPORT=shm puts the ranks on shared memory.
func BenchmarkHaloJacobi(b *testing.B) {
	if inJob() {
		b.Skip("goroutine ranks")
	}
	const rows, cols = 32, 64
	counts := []int{cols, cols, rows, rows}
	displs := []int{0, cols, 2 * cols, 2*cols + rows}
	for _, how := range []string{"alltoallv", "sendrecv"} {
		b.Run(how, func(b *testing.B) {
			b.ReportAllocs()
			err := comm.Run(2, func(c *comm.Comm) error {
				cart, err := NewCart(c, []int{2, 1}, []bool{false, false}, false)
				if err != nil {
					return err
				}
				srcs, _ := cart.Neighbors()
				send, recv := make([]float64, 2*cols+2*rows), make([]float64, 2*cols+2*rows)
				reqs := make([]*comm.Request, 0, 8)
				for i := 0; i < b.N; i++ {
					if how == "alltoallv" {
						if err := NeighborAlltoallv(cart, send, counts, displs, recv, counts, displs); err != nil {
							return err
						}
						continue
					}
					reqs = reqs[:0]
					for s, nb := range srcs {
						if nb == ProcNull {
							continue
						}
						reqs = append(reqs, comm.Irecv(cart.Comm(), recv[displs[s]:displs[s]+counts[s]], nb, s^1))
						reqs = append(reqs, comm.Isend(cart.Comm(), send[displs[s]:displs[s]+counts[s]], nb, s))
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
