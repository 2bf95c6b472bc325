package tp

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// BenchmarkAllreduceSum: the group's allreduce over the in-process transport (b.N calls on
// every rank), for the sizes a forward pass reduces: a token's hidden vector and a batch's.
func BenchmarkAllreduceSum(b *testing.B) {
	for _, p := range []int{2, 4} {
		for _, n := range []int{2, 1024, 16384} {
			b.Run(fmt.Sprintf("np%d/%dB", p, 4*n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				err := comm.Run(p, func(c *comm.Comm) error {
					g := New(c)
					x := make([]float32, n)
					for range b.N {
						if err := g.AllreduceSum(x); err != nil {
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
