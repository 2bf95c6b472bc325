package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack/gonum"
)

// toRowMajor copies the r×c column-major matrix into a dense row-major one.
func toRowMajor(r, c int, a []float64, lda int) []float64 {
	out := make([]float64, r*c)
	for j := range c {
		for i := range r {
			out[i*c+j] = a[i+j*lda]
		}
	}
	return out
}

// luResidual returns max |P L U - A| / (n * max|A|) for the factors in lu.
func luResidual(m, n int, a0 []float64, lda int, lu []float64, ipiv []int) float64 {
	mn := min(m, n)
	// L is m×mn unit lower, U is mn×n upper.
	l := make([]float64, m*mn)
	u := make([]float64, mn*n)
	for j := range mn {
		for i := range m {
			switch {
			case i == j:
				l[i+j*m] = 1
			case i > j:
				l[i+j*m] = lu[i+j*lda]
			}
		}
	}
	for j := range n {
		for i := 0; i <= min(j, mn-1); i++ {
			u[i+j*mn] = lu[i+j*lda]
		}
	}
	prod := make([]float64, m*n)
	refDgemm(NoTrans, NoTrans, m, n, mn, 1, l, m, u, mn, 0, prod, m)
	// Undo the interchanges: P L U has row i of L U at row ipiv...
	for k := mn - 1; k >= 0; k-- {
		if p := ipiv[k]; p != k {
			for j := range n {
				prod[k+j*m], prod[p+j*m] = prod[p+j*m], prod[k+j*m]
			}
		}
	}
	var amax float64
	for j := range n {
		for i := range m {
			amax = max(amax, math.Abs(a0[i+j*lda]))
		}
	}
	return maxDiff(m, n, prod, m, a0, lda) / (float64(max(m, n)) * max(amax, 1e-300))
}

func TestDgetrf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	dims := []int{1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 64, 65, 100, 150}
	if !testing.Short() {
		dims = append(dims, 300, 517)
	}
	for _, m := range dims {
		for _, n := range dims {
			if (m > 150 || n > 150) && m != n {
				continue
			}
			lda := m + rng.IntN(3)
			a := randMat(rng, m, n, lda)
			a0 := append([]float64(nil), a...)
			ipiv := make([]int, min(m, n))
			info := Dgetrf(m, n, a, lda, ipiv)
			name := fmt.Sprintf("Dgetrf(m=%d,n=%d,lda=%d)", m, n, lda)
			if info != 0 {
				t.Fatalf("%s: info = %d for a random matrix", name, info)
			}
			checkPad(t, name, a, m, n, lda)
			if res := luResidual(m, n, a0, lda, a, ipiv); res > 1e-14 {
				t.Fatalf("%s: relative residual |PLU-A| = %g", name, res)
			}
			// gonum (row-major) on the same matrix must pick the same pivots
			// and produce the same factors up to rounding.
			rm := toRowMajor(m, n, a0, lda)
			gpiv := make([]int, min(m, n))
			gonum.Implementation{}.Dgetrf(m, n, rm, max(1, n), gpiv)
			for i := range gpiv {
				if gpiv[i] != ipiv[i] {
					t.Fatalf("%s: ipiv[%d] = %d, gonum %d", name, i, ipiv[i], gpiv[i])
				}
			}
			got := toRowMajor(m, n, a, lda)
			for i := range got {
				if d := math.Abs(got[i] - rm[i]); d > 1e-9 {
					t.Fatalf("%s: factor element %d differs from gonum by %g", name, i, d)
				}
			}
		}
	}
}

func TestDgetrfSingular(t *testing.T) {
	// An upper triangular matrix with U[2,2] == 0: no interchanges happen,
	// the zero pivot is exact and info must be 3, while the factorisation
	// still completes.
	n := 5
	a := make([]float64, n*n)
	rng := rand.New(rand.NewPCG(11, 12))
	for j := range n {
		for i := 0; i <= j; i++ {
			a[i+j*n] = float64(rng.IntN(9) + 1)
		}
	}
	a[2+2*n] = 0
	ipiv := make([]int, n)
	if info := Dgetrf(n, n, a, n, ipiv); info != 3 {
		t.Fatalf("info = %d, want 3", info)
	}
	z := make([]float64, 3*4)
	if info := Dgetrf(3, 4, z, 3, make([]int, 3)); info != 1 {
		t.Fatalf("zero matrix: info = %d, want 1", info)
	}
	// A zero column deep inside the recursion.
	big := 70
	b := randMat(rng, big, big, big)
	for i := range big {
		b[i+40*big] = 0
	}
	if info := Dgetrf(big, big, b, big, make([]int, big)); info != 41 {
		t.Fatalf("zero column 40: info = %d, want 41", info)
	}
}

func TestDgetrs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 2, 7, 33, 100} {
		for _, nrhs := range []int{1, 3, 40} {
			for _, tr := range transes {
				lda, ldb := n+rng.IntN(3), n+rng.IntN(3)
				a := randMat(rng, n, n, lda)
				for i := range n {
					a[i+i*lda] += 2 // keep it well conditioned
				}
				a0 := append([]float64(nil), a...)
				x := randMat(rng, n, nrhs, ldb)
				b := append([]float64(nil), x...)
				// b = op(A) x
				refDgemm(tr, NoTrans, n, nrhs, n, 1, a0, lda, x, ldb, 0, b, ldb)
				ipiv := make([]int, n)
				if info := Dgetrf(n, n, a, lda, ipiv); info != 0 {
					t.Fatalf("n=%d: info %d", n, info)
				}
				// Compare with gonum's row-major Dgetrs on the same factors.
				grow := toRowMajor(n, n, a, lda)
				gb := toRowMajor(n, nrhs, b, ldb)
				gt := blas.NoTrans
				if tr == Trans {
					gt = blas.Trans
				}
				gonum.Implementation{}.Dgetrs(gt, n, nrhs, grow, n, ipiv, gb, max(1, nrhs))
				Dgetrs(tr, n, nrhs, a, lda, ipiv, b, ldb)
				name := fmt.Sprintf("Dgetrs(%c,n=%d,nrhs=%d)", tr, n, nrhs)
				checkPad(t, name, b, n, nrhs, ldb)
				if d := maxDiff(n, nrhs, b, ldb, x, ldb); d > 1e-10 {
					t.Fatalf("%s: solution differs from x by %g", name, d)
				}
				got := toRowMajor(n, nrhs, b, ldb)
				for i := range got {
					if d := math.Abs(got[i] - gb[i]); d > 1e-10 {
						t.Fatalf("%s: differs from gonum by %g", name, d)
					}
				}
			}
		}
	}
}

func TestLapackPanics(t *testing.T) {
	a := make([]float64, 16)
	cases := map[string]func(){
		"getrf m<0":      func() { Dgetrf(-1, 2, a, 2, make([]int, 2)) },
		"getrf lda":      func() { Dgetrf(4, 4, a, 3, make([]int, 4)) },
		"getrf short a":  func() { Dgetrf(4, 4, a[:15], 4, make([]int, 4)) },
		"getrf ipiv":     func() { Dgetrf(4, 4, a, 4, make([]int, 3)) },
		"getrs bad t":    func() { Dgetrs('C', 2, 1, a, 2, []int{0, 1}, a, 2) },
		"getrs ipiv":     func() { Dgetrs(NoTrans, 2, 1, a, 2, []int{0, 5}, a, 2) },
		"getrs ldb":      func() { Dgetrs(NoTrans, 4, 1, a, 4, []int{0, 1, 2, 3}, a, 3) },
		"laswp k2<k1":    func() { Dlaswp(2, a, 4, 2, 1, []int{0, 1, 2}, 1) },
		"laswp inc":      func() { Dlaswp(2, a, 4, 0, 1, []int{0, 1}, 2) },
		"laswp ipiv out": func() { Dlaswp(2, a, 4, 0, 1, []int{0, 9}, 1) },
		"laswp short a":  func() { Dlaswp(4, a[:13], 4, 0, 1, []int{0, 3}, 1) },
		"laswp ipiv len": func() { Dlaswp(2, a, 4, 0, 2, []int{0, 1}, 1) },
	}
	for name, f := range cases {
		mustPanic(t, name, f)
	}
}

// TestDgetrfBlocked covers the blocked, look-ahead path (min(m, n) larger
// than two panels) on square, tall and wide matrices with 1 and 3
// goroutines, comparing the factors and pivots with gonum.
func TestDgetrfBlocked(t *testing.T) {
	if testing.Short() {
		t.Skip("large factorisations")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, th := range []int{1, 3} {
		for _, s := range [][2]int{{600, 600}, {790, 530}, {530, 820}} {
			func() {
				defer SetThreads(SetThreads(th))
				m, n := s[0], s[1]
				lda := m + 3
				a := randMat(rng, m, n, lda)
				a0 := append([]float64(nil), a...)
				ipiv := make([]int, min(m, n))
				name := fmt.Sprintf("Dgetrf(m=%d,n=%d,threads=%d)", m, n, th)
				if info := Dgetrf(m, n, a, lda, ipiv); info != 0 {
					t.Fatalf("%s: info = %d", name, info)
				}
				checkPad(t, name, a, m, n, lda)
				if res := luResidual(m, n, a0, lda, a, ipiv); res > 1e-14 {
					t.Fatalf("%s: relative residual %g", name, res)
				}
				rm := toRowMajor(m, n, a0, lda)
				gpiv := make([]int, min(m, n))
				gonum.Implementation{}.Dgetrf(m, n, rm, n, gpiv)
				for i := range gpiv {
					if gpiv[i] != ipiv[i] {
						t.Fatalf("%s: ipiv[%d] = %d, gonum %d", name, i, ipiv[i], gpiv[i])
					}
				}
			}()
		}
	}
	// Zero columns in the second and third panels: info names the first.
	for _, th := range []int{1, 2} {
		func() {
			defer SetThreads(SetThreads(th))
			n := 700
			a := randMat(rng, n, n, n)
			for i := range n {
				a[i+300*n] = 0
				a[i+600*n] = 0
			}
			if info := Dgetrf(n, n, a, n, make([]int, n)); info != 301 {
				t.Fatalf("threads=%d: info = %d, want 301", th, info)
			}
		}()
	}
}
