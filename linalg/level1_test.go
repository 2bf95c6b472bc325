package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/gonum"
)

func randVec(rng *rand.Rand, n, inc int) []float64 {
	x := make([]float64, vecLen(n, inc)+2)
	for i := range x {
		x[i] = rng.Float64()*2 - 1
	}
	return x
}

func sameVec(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", name, len(got), len(want))
	}
	for i := range got {
		if d := got[i] - want[i]; d > 1e-14 || d < -1e-14 {
			t.Fatalf("%s: element %d = %v, gonum %v", name, i, got[i], want[i])
		}
	}
}

func TestLevel1(t *testing.T) {
	g := blas64.Implementation()
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{0, 1, 2, 7, 33} {
		for _, incx := range []int{1, 2, -1, -3} {
			for _, incy := range []int{1, 3, -2} {
				name := fmt.Sprintf("n=%d incx=%d incy=%d", n, incx, incy)
				x, y := randVec(rng, n, incx), randVec(rng, n, incy)
				x2, y2 := append([]float64(nil), x...), append([]float64(nil), y...)
				Dswap(n, x, incx, y, incy)
				g.Dswap(n, x2, incx, y2, incy)
				sameVec(t, "Dswap "+name+" x", x, x2)
				sameVec(t, "Dswap "+name+" y", y, y2)

				for _, alpha := range []float64{0, 1, -0.3} {
					Daxpy(n, alpha, x, incx, y, incy)
					g.Daxpy(n, alpha, x2, incx, y2, incy)
					sameVec(t, "Daxpy "+name, y, y2)
				}
				if incx > 0 {
					if got, want := Idamax(n, x, incx), g.Idamax(n, x2, incx); got != want {
						t.Fatalf("Idamax %s: %d, gonum %d", name, got, want)
					}
					for _, alpha := range []float64{0, 1, 2.5} {
						Dscal(n, alpha, x, incx)
						g.Dscal(n, alpha, x2, incx)
						sameVec(t, "Dscal "+name, x, x2)
					}
				} else if got := Idamax(n, x, incx); got != -1 {
					t.Fatalf("Idamax %s: %d for a negative increment, want -1", name, got)
				}
			}
		}
	}
}

func TestDger(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, m := range []int{1, 2, 7, 20} {
		for _, n := range []int{1, 3, 16} {
			for _, incx := range []int{1, -2} {
				for _, incy := range []int{1, 3} {
					lda := m + rng.IntN(3)
					a := randMat(rng, m, n, lda)
					want := append([]float64(nil), a...)
					x, y := randVec(rng, m, incx), randVec(rng, n, incy)
					// Naive reference: gonum's Dger mishandles negative
					// increments in its assembly path.
					for j := range n {
						for i := range m {
							want[i+j*lda] += 0.7 * x[vecStart(m, incx)+i*incx] * y[vecStart(n, incy)+j*incy]
						}
					}
					Dger(m, n, 0.7, x, incx, y, incy, a, lda)
					name := fmt.Sprintf("Dger m=%d n=%d incx=%d incy=%d lda=%d", m, n, incx, incy, lda)
					if d := maxDiff(m, n, a, lda, want, lda); d > 1e-14 {
						t.Fatalf("%s: differs from gonum by %g", name, d)
					}
					checkPad(t, name, a, m, n, lda)
				}
			}
		}
	}
}

func TestDlaswp(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, m := range []int{1, 5, 40} {
		for _, n := range []int{1, 3, 70} {
			lda := m + rng.IntN(3)
			k1 := rng.IntN(m)
			k2 := k1 + rng.IntN(m-k1)
			ipiv := make([]int, k2+1)
			for k := range ipiv {
				ipiv[k] = k + rng.IntN(m-k)
			}
			for _, inc := range []int{1, -1} {
				a := randMat(rng, m, n, lda)
				// gonum's Dlaswp is row-major: hand it the transposed copy.
				rm := toRowMajor(m, n, a, lda)
				gonum.Implementation{}.Dlaswp(n, rm, max(1, n), k1, k2, ipiv, inc)
				Dlaswp(n, a, lda, k1, k2, ipiv, inc)
				name := fmt.Sprintf("Dlaswp m=%d n=%d k1=%d k2=%d inc=%d", m, n, k1, k2, inc)
				checkPad(t, name, a, m, n, lda)
				sameVec(t, name, toRowMajor(m, n, a, lda), rm)
			}
		}
	}
}

func TestLevel1Panics(t *testing.T) {
	x := make([]float64, 4)
	cases := map[string]func(){
		"idamax inc0":  func() { Idamax(2, x, 0) },
		"idamax short": func() { Idamax(5, x, 1) },
		"swap short y": func() { Dswap(3, x, 1, x[:2], 1) },
		"swap n<0":     func() { Dswap(-1, x, 1, x, 1) },
		"scal inc<0":   func() { Dscal(2, 1, x, -1) },
		"axpy short":   func() { Daxpy(3, 1, x, 2, x, 1) },
		"ger short a":  func() { Dger(2, 2, 1, x, 1, x, 1, x[:3], 2) },
		"ger lda":      func() { Dger(2, 2, 1, x, 1, x, 1, x, 1) },
		"ger incy0":    func() { Dger(2, 2, 1, x, 1, x, 0, x, 2) },
	}
	for name, f := range cases {
		mustPanic(t, name, f)
	}
}

// TestLevel1Assembly checks the assembly level-1 loops against the Go ones at every length
// up to 70 and a long one, from unaligned starts: axpy exactly as math.FMA, scal exactly, and
// Idamax's index with ties of either sign, ±0, infinities and NaNs anywhere.
func TestLevel1Assembly(t *testing.T) {
	if axpyAsm == nil {
		t.Skip("no assembly level-1 loops on this CPU")
	}
	goIdamax := func(n int, x []float64) int {
		m := maxAbsAsm
		maxAbsAsm = nil
		defer func() { maxAbsAsm = m }()
		return Idamax(n, x, 1)
	}
	rng := rand.New(rand.NewPCG(17, 18))
	lengths := []int{1037}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for off := range 4 {
			x, y := randVec(rng, n+off, 1)[off:off+n], randVec(rng, n+off, 1)[off:off+n]
			want := make([]float64, n)
			for i := range y {
				want[i] = math.FMA(-0.7, x[i], y[i])
			}
			if n > 0 {
				axpyAsm(n, -0.7, &x[0], &y[0])
			}
			if !slices.Equal(y, want) {
				t.Fatalf("axpy n=%d offset %d: differs from math.FMA", n, off)
			}
			for i := range want {
				want[i] = y[i] * 1.3
			}
			Dscal(n, 1.3, y, 1)
			if !slices.Equal(y, want) {
				t.Fatalf("Dscal n=%d offset %d: differs from the Go loop", n, off)
			}
			if n == 0 {
				continue
			}
			for c := range 6 {
				v := slices.Clone(x)
				switch c {
				case 1: // a tie of opposite signs: the first wins
					i, j := rng.IntN(n), rng.IntN(n)
					v[i], v[j] = 5, -5
				case 2:
					clear(v)
					v[rng.IntN(n)] = math.Copysign(0, -1)
				case 3:
					v[rng.IntN(n)] = math.NaN()
					v[rng.IntN(n)] = math.NaN()
				case 4:
					v[rng.IntN(n)] = math.Inf(-1)
					v[rng.IntN(n)] = math.NaN()
				case 5:
					for i := range v {
						v[i] = math.NaN()
					}
					v[0], v[n-1] = 0.25, 0.5 // NaNs between, in the vector and in the scalar loop
				}
				if got, want := Idamax(n, v, 1), goIdamax(n, v); got != want {
					t.Fatalf("Idamax n=%d offset %d case %d: %d, the Go loop %d", n, off, c, got, want)
				}
			}
		}
	}
}
