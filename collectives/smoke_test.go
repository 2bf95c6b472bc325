package collectives

import (
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

func TestSmokeAllreduce(t *testing.T) {
	for _, alg := range []string{AlgRecursiveDoubling, AlgRabenseifner, AlgRing} {
		withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg })
		for p := 1; p <= 8; p++ {
			for _, n := range []int{0, 1, 7, 100, 5000} {
				run(t, p, func(c *comm.Comm) error {
					recv := make([]float64, n)
					if err := Allreduce(c, fill[float64](c.Rank(), n, false), recv, Sum[float64]()); err != nil {
						return err
					}
					if err := equal(recv, refReduce[float64]("Sum", 0, p, n)); err != nil {
						t.Errorf("%s p=%d n=%d rank %d: %v", alg, p, n, c.Rank(), err)
					}
					return nil
				})
			}
		}
	}
}
