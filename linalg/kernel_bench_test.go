package linalg

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkKernel measures each available micro-kernel on L1/L2-resident
// packed panels: the ceiling for Dgemm's speed on this CPU.
func BenchmarkKernel(b *testing.B) {
	for _, kn := range availableKernels() {
		b.Run(kn.name, func(b *testing.B) {
			const kc = 256
			rng := rand.New(rand.NewPCG(4, 4))
			a := randMat(rng, kn.mr*kc, 1, kn.mr*kc)
			bb := randMat(rng, kn.nr*kc, 1, kn.nr*kc)
			c := make([]float64, kn.mr*kn.nr)
			for b.Loop() {
				kn.fn(kc, &a[0], &bb[0], &c[0], kn.mr, 1)
			}
			b.ReportMetric(2*float64(kn.mr*kn.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
