package linalg

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

func gonumTrans(t Transpose) blas.Transpose {
	if t == Trans {
		return blas.Trans
	}
	return blas.NoTrans
}

// refDgemm is gonum's Dgemm applied to column-major data: a column-major
// C = op(A) op(B) is the row-major Cᵀ = op(B)ᵀ op(A)ᵀ on the same memory.
func refDgemm(tA, tB Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	blas64.Implementation().Dgemm(gonumTrans(tB), gonumTrans(tA), n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
}

func testDgemmCase(t *testing.T, rng *rand.Rand, tA, tB Transpose, m, n, k, padA, padB, padC int, alpha, beta float64) {
	t.Helper()
	ar, ac := m, k
	if tA == Trans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	lda, ldb, ldc := max(1, ar)+padA, max(1, br)+padB, max(1, m)+padC
	a := randMat(rng, ar, ac, lda)
	b := randMat(rng, br, bc, ldb)
	c := randMat(rng, m, n, ldc)
	want := append([]float64(nil), c...)
	if beta == 0 {
		// Reference BLAS must not read C when beta == 0: poison it.
		for j := range n {
			for i := range m {
				c[i+j*ldc] = pad
				want[i+j*ldc] = 0
			}
		}
	}
	refDgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
	a0 := append([]float64(nil), a...)
	b0 := append([]float64(nil), b...)
	Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	name := fmt.Sprintf("Dgemm(%c,%c,m=%d,n=%d,k=%d,alpha=%v,lda=%d,ldb=%d,beta=%v,ldc=%d)", tA, tB, m, n, k, alpha, lda, ldb, beta, ldc)
	tol := 1e-13 * float64(k+2)
	if d := maxDiff(m, n, c, ldc, want, ldc); d > tol {
		t.Fatalf("%s: max difference from gonum %g > %g", name, d, tol)
	}
	checkPad(t, name+" C", c, m, n, ldc)
	for i := range a {
		if a[i] != a0[i] && !(a[i] != a[i] && a0[i] != a0[i]) {
			t.Fatalf("%s: A modified at %d", name, i)
		}
	}
	for i := range b {
		if b[i] != b0[i] && !(b[i] != b[i] && b0[i] != b0[i]) {
			t.Fatalf("%s: B modified at %d", name, i)
		}
	}
}

var transes = []Transpose{NoTrans, Trans}

func TestDgemmShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tA := range transes {
		for _, tB := range transes {
			for _, m := range sizes {
				for _, n := range sizes {
					k := sizes[rng.IntN(len(sizes))]
					testDgemmCase(t, rng, tA, tB, m, n, k, rng.IntN(3), rng.IntN(3), rng.IntN(3), 1, 1)
				}
			}
		}
	}
}

func TestDgemmAlphaBeta(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tA := range transes {
		for _, tB := range transes {
			for _, alpha := range []float64{0, 1, -1, 0.7} {
				for _, beta := range []float64{0, 1, -1, 0.3} {
					for range 4 {
						m, n, k := 1+rng.IntN(40), 1+rng.IntN(40), rng.IntN(40)
						testDgemmCase(t, rng, tA, tB, m, n, k, rng.IntN(4), rng.IntN(4), rng.IntN(4), alpha, beta)
					}
				}
			}
		}
	}
}

// TestDgemmLarge covers sizes that cross every cache-blocking boundary and
// the parallel split.
func TestDgemmLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := [][3]int{{300, 290, 310}, {5, 9, 25000}, {30, 700, 400}, {50, 1500, 64}, {200, 9, 300}, {513, 257, 1}, {1, 700, 400}, {700, 1, 400}, {97, 1030, 260}, {1100, 70, 530}}
	if !testing.Short() {
		shapes = append(shapes, [3]int{1031, 1029, 1027})
	}
	for _, s := range shapes {
		for _, tA := range transes {
			for _, tB := range transes {
				testDgemmCase(t, rng, tA, tB, s[0], s[1], s[2], rng.IntN(5), rng.IntN(5), rng.IntN(5), 0.9, 0.5)
			}
		}
	}
}

func TestDgemmEmpty(t *testing.T) {
	// Zero sizes with minimal slices must neither panic nor write.
	Dgemm(NoTrans, NoTrans, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 1)
	c := []float64{5}
	Dgemm(NoTrans, NoTrans, 1, 1, 0, 1, nil, 1, nil, 1, 2, c, 1)
	if c[0] != 10 {
		t.Fatalf("k=0: C = %v, want beta*C = 10", c[0])
	}
}

func TestDgemmPanics(t *testing.T) {
	a := make([]float64, 16)
	cases := map[string]func(){
		"bad tA":    func() { Dgemm('X', NoTrans, 2, 2, 2, 1, a, 2, a, 2, 0, a, 2) },
		"m<0":       func() { Dgemm(NoTrans, NoTrans, -1, 2, 2, 1, a, 2, a, 2, 0, a, 2) },
		"lda<m":     func() { Dgemm(NoTrans, NoTrans, 3, 2, 2, 1, a, 2, a, 3, 0, a, 3) },
		"ldaT<k":    func() { Dgemm(Trans, NoTrans, 2, 2, 3, 1, a, 2, a, 3, 0, a, 2) },
		"short a":   func() { Dgemm(NoTrans, NoTrans, 4, 4, 4, 1, a[:15], 4, a, 4, 0, a, 4) },
		"short c":   func() { Dgemm(NoTrans, NoTrans, 4, 4, 4, 1, a, 4, a, 4, 0, a[:3], 4) },
		"ldc<m":     func() { Dgemm(NoTrans, NoTrans, 4, 1, 1, 1, a, 4, a, 1, 0, a, 3) },
		"ldb<1 n=0": func() { Dgemm(NoTrans, NoTrans, 1, 0, 1, 1, a, 1, a, 0, 0, a, 1) },
	}
	for name, f := range cases {
		mustPanic(t, name, f)
	}
}

// TestDgemmConcurrent runs Dgemm from several goroutines at once (as SPMD
// ranks in one process do): the shared packing-buffer cache and the worker
// pools must keep the calls apart.
func TestDgemmConcurrent(t *testing.T) {
	const n, callers = 200, 4
	rng := rand.New(rand.NewPCG(23, 24))
	a, b := randMat(rng, n, n, n), randMat(rng, n, n, n)
	want := make([]float64, n*n)
	refDgemm(NoTrans, NoTrans, n, n, n, 1, a, n, b, n, 0, want, n)
	errs := make(chan string, callers)
	for g := range callers {
		go func() {
			c := make([]float64, n*n)
			for range 5 {
				Dgemm(NoTrans, NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
				if d := maxDiff(n, n, c, n, want, n); d > 1e-12 {
					errs <- fmt.Sprintf("caller %d: differs from gonum by %g", g, d)
					return
				}
			}
			errs <- ""
		}()
	}
	for range callers {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}

// TestDgemmEveryKernel runs the packed driver with each micro-kernel this
// CPU can run (not only the one chosen at start-up), with tiny cache blocks
// so that every blocking boundary (mc, kc, nc, partial tiles) is crossed
// many times, single- and multi-threaded.
func TestDgemmEveryKernel(t *testing.T) {
	saved := kern
	defer func() { kern = saved }()
	rng := rand.New(rand.NewPCG(25, 26))
	for _, kn := range availableKernels() {
		kn.mc, kn.kc, kn.nc = 2*kn.mr, 37, 3*kn.nr
		kern = kn
		for _, th := range []int{1, 2} {
			func() {
				defer SetThreads(SetThreads(th))
				for _, s := range [][3]int{{101, 67, 93}, {kn.mr*3 + 1, kn.nr*4 - 1, 75}, {150, 150, 150}} {
					for _, tA := range transes {
						for _, tB := range transes {
							testDgemmCase(t, rng, tA, tB, s[0], s[1], s[2], rng.IntN(3), rng.IntN(3), rng.IntN(3), -0.5, 0.25)
						}
					}
				}
			}()
		}
	}
}

// TestDgemmThin covers the shapes gemmThin takes (small k and op(B), LU's
// panel updates) and its limits, rows that are not a multiple of the tile,
// and both forms of B, against gonum.
func TestDgemmThin(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, m := range []int{kern.mr, kern.mr + 1, 3*kern.mr - 1, 301} {
		for _, nk := range [][2]int{{1, 1}, {4, 4}, {4, 8}, {5, 3}, {12, 12}, {13, 24}, {48, 48}, {7, thinMaxK}, {thinMaxB / thinMaxK, thinMaxK}, {thinMaxB/thinMaxK + 1, thinMaxK}, {3, thinMaxK + 1}} {
			for _, tB := range transes {
				testDgemmCase(t, rng, NoTrans, tB, m, nk[0], nk[1], rng.IntN(3), rng.IntN(3), rng.IntN(3), -1, 1)
				testDgemmCase(t, rng, NoTrans, tB, m, nk[0], nk[1], 0, 1, 2, 0.5, 0)
			}
		}
	}
}

// TestDgemmPrepackA covers one worker with k inside one block and several
// column blocks (HPL's update), where A is packed once for all of them:
// row counts around the tile, k at and below the block, against gonum.
func TestDgemmPrepackA(t *testing.T) {
	defer SetThreads(SetThreads(1))
	rng := rand.New(rand.NewPCG(13, 14))
	for _, m := range []int{kern.mr, 3*kern.mr + 1, kern.mc + 5} {
		for _, k := range []int{1, 37, kern.kc} {
			n := 2*kern.nc + kern.nr + 1
			testDgemmCase(t, rng, NoTrans, NoTrans, m, n, k, 1, 0, 2, -1, 1)
			testDgemmCase(t, rng, Trans, Trans, m, n, k, 0, 3, 0, 0.5, 0)
		}
	}
}

// TestPackAssembly checks the assembly packing routines against the Go loops they replace:
// A in blocks of 8 and 24 rows, B in panels of 6 columns, depths around the four-row step of packB6.
func TestPackAssembly(t *testing.T) {
	if packA8 == nil && packA24 == nil && packB6 == nil {
		t.Skip("no assembly packing on this CPU")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	randSlice := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		return s
	}
	withoutAsm := func(f func()) {
		a8, a24, b6 := packA8, packA24, packB6
		packA8, packA24, packB6 = nil, nil, nil
		defer func() { packA8, packA24, packB6 = a8, a24, b6 }()
		f()
	}
	for _, kc := range []int{1, 3, 4, 5, 8, 37, 192} {
		for _, mr := range []int{8, 24} {
			for _, mc := range []int{8, 17, 24, 96, 97} {
				lda, ic, pc := mc+5, 2, 1
				a := randSlice(lda * (kc + pc))
				n := (mc + mr - 1) / mr * mr * kc
				want, got := make([]float64, n), make([]float64, n)
				withoutAsm(func() { packANoTrans(mr, mc, kc, a, lda, ic, pc, want) })
				packANoTrans(mr, mc, kc, a, lda, ic, pc, got)
				if !slices.Equal(want, got) {
					t.Fatalf("packA mr=%d mc=%d kc=%d: assembly and Go differ", mr, mc, kc)
				}
			}
		}
		nc, ldb, pc, jc := 3*6+2, kc+4, 3, 1
		b := randSlice(ldb * (jc + nc))
		want, got := make([]float64, 4*6*kc), make([]float64, 4*6*kc)
		withoutAsm(func() { packB(false, 6, kc, nc, b, ldb, pc, jc, 0, 4, want) })
		packB(false, 6, kc, nc, b, ldb, pc, jc, 0, 4, got)
		if !slices.Equal(want, got) {
			t.Fatalf("packB kc=%d: assembly and Go differ", kc)
		}
	}
}
