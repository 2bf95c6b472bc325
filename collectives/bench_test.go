package collectives

import (
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// Benchmarks over the in-process transport: they measure the algorithms' own overhead (and
// the memory traffic of large vectors), not a network. b.N iterations run on every rank.
func benchAllreduce(b *testing.B, p, nbytes int, alg string) {
	old := CurrentTuning()
	t := old
	if alg != "" {
		t.AllreduceAlgorithm = alg
	}
	SetTuning(t)
	defer SetTuning(old)
	n := nbytes / 4
	b.SetBytes(int64(nbytes))
	b.ResetTimer()
	err := comm.Run(p, func(c *comm.Comm) error {
		s, r := make([]float32, n), make([]float32, n)
		for i := range s {
			s[i] = 1
		}
		for range b.N {
			if err := Allreduce(c, s, r, Sum[float32]()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkAllreduce(b *testing.B) {
	for _, p := range []int{2, 4} {
		for _, nb := range []int{8, 64 << 10, 1 << 20, 16 << 20} {
			for _, alg := range []string{"", AlgRecursiveDoubling, AlgRabenseifner, AlgRing} {
				if alg != "" && nb < 64<<10 {
					continue
				}
				name := alg
				if name == "" {
					name = "auto"
				}
				b.Run(fmt.Sprintf("np%d/%dB/%s", p, nb, name), func(b *testing.B) { benchAllreduce(b, p, nb, alg) })
			}
		}
	}
}

func BenchmarkBcast(b *testing.B) {
	for _, p := range []int{2, 4} {
		for _, nb := range []int{8, 16 << 20} {
			b.Run(fmt.Sprintf("np%d/%dB", p, nb), func(b *testing.B) {
				b.SetBytes(int64(nb))
				err := comm.Run(p, func(c *comm.Comm) error {
					buf := make([]byte, nb)
					for range b.N {
						if err := Bcast(c, buf, 0); err != nil {
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

func BenchmarkBarrier(b *testing.B) {
	for _, p := range []int{2, 4} {
		b.Run(fmt.Sprintf("np%d", p), func(b *testing.B) {
			err := comm.Run(p, func(c *comm.Comm) error {
				for range b.N {
					if err := Barrier(c); err != nil {
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
