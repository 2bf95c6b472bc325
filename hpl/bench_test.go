package hpl

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/linalg"
)

// BenchmarkSolve times one solve (generation and check excluded) on inproc ranks; it reports
// HPL's Gflops. One Dgemm goroutine per rank, as HPL runs one BLAS thread per process.
func BenchmarkSolve(b *testing.B) {
	defer linalg.SetThreads(linalg.SetThreads(1))
	for _, c := range []struct{ P, Q, n, nb int }{{1, 1, 2000, 128}, {1, 1, 4000, 128}, {1, 2, 3000, 128}} {
		b.Run(fmt.Sprintf("%dx%d/N=%d/NB=%d", c.P, c.Q, c.n, c.nb), func(b *testing.B) {
			var gf float64
			for range b.N {
				err := comm.Run(c.P*c.Q, func(cm *comm.Comm) error {
					g, err := NewGrid(cm, RowMajor, c.P, c.Q)
					if err != nil {
						return err
					}
					r, _, err := RunTest(g, defaultAlgo(), c.n, c.nb, 0, Options{})
					if err == nil && cm.Rank() == 0 {
						gf = r.Gflops
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(gf, "Gflops")
		})
	}
}
