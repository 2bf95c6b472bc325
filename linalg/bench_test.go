package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchGemm(b *testing.B, tA, tB Transpose, n, threads int) {
	defer SetThreads(SetThreads(threads))
	rng := rand.New(rand.NewPCG(1, 1))
	a := randMat(rng, n, n, n)
	bb := randMat(rng, n, n, n)
	c := randMat(rng, n, n, n)
	Dgemm(tA, tB, n, n, n, 1, a, n, bb, n, 0, c, n) // warm the buffers
	b.ResetTimer()
	for b.Loop() {
		Dgemm(tA, tB, n, n, n, 1, a, n, bb, n, 0, c, n)
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkDgemm reports GFLOP/s for square C = A*B with 1 and 2 goroutines.
func BenchmarkDgemm(b *testing.B) {
	for _, n := range []int{64, 256, 512, 1024, 2048} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("NN/n=%d/threads=%d", n, th), func(b *testing.B) { benchGemm(b, NoTrans, NoTrans, n, th) })
		}
	}
}

// BenchmarkDgemmUpdate is HPL's trailing update shape: C -= A*B with a
// depth of one panel (NB = 192).
func BenchmarkDgemmUpdate(b *testing.B) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("m=n=2048/k=192/threads=%d", th), func(b *testing.B) {
			defer SetThreads(SetThreads(th))
			const n, k = 2048, 192
			rng := rand.New(rand.NewPCG(5, 5))
			a, bb, c := randMat(rng, n, k, n), randMat(rng, k, n, k), randMat(rng, n, n, n)
			for b.Loop() {
				Dgemm(NoTrans, NoTrans, n, n, k, -1, a, n, bb, k, 1, c, n)
			}
			b.ReportMetric(2*float64(n)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkDgemmTrans covers the transposed operand paths (packing differs).
func BenchmarkDgemmTrans(b *testing.B) {
	for _, t := range [][2]Transpose{{Trans, NoTrans}, {NoTrans, Trans}, {Trans, Trans}} {
		b.Run(fmt.Sprintf("%c%c/n=1024/threads=1", t[0], t[1]), func(b *testing.B) { benchGemm(b, t[0], t[1], 1024, 1) })
	}
}

// BenchmarkDgetrf reports GFLOP/s (2n³/3) for the LU factorisation.
func BenchmarkDgetrf(b *testing.B) {
	for _, n := range []int{512, 1024, 2048, 4096} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/threads=%d", n, th), func(b *testing.B) {
				defer SetThreads(SetThreads(th))
				rng := rand.New(rand.NewPCG(2, 2))
				a0 := randMat(rng, n, n, n)
				a := make([]float64, len(a0))
				ipiv := make([]int, n)
				var elapsed float64
				for b.Loop() {
					b.StopTimer()
					copy(a, a0)
					b.StartTimer()
					Dgetrf(n, n, a, n, ipiv)
				}
				elapsed = b.Elapsed().Seconds()
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)/3*float64(b.N)/elapsed/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkDtrsm reports GFLOP/s (n³) for the left lower unit solve that LU uses.
func BenchmarkDtrsm(b *testing.B) {
	for _, n := range []int{1024, 2048} {
		b.Run(fmt.Sprintf("LLNU/n=%d/threads=1", n), func(b *testing.B) {
			defer SetThreads(SetThreads(1))
			rng := rand.New(rand.NewPCG(3, 3))
			a := randMat(rng, n, n, n)
			bb := randMat(rng, n, n, n)
			for b.Loop() {
				Dtrsm(Left, Lower, NoTrans, Unit, n, n, 1, a, n, bb, n)
			}
			b.ReportMetric(float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
