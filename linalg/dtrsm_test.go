package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// refDtrsm is gonum's Dtrsm on column-major data. In the row-major view
// the system becomes X ᵀ op(A)ᵀ = alpha Bᵀ with A's storage read as Aᵀ, so
// the side and the triangle flip and the transpose stays.
func refDtrsm(s Side, ul Uplo, tA Transpose, d Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	gs, gu, gd := blas.Left, blas.Lower, blas.NonUnit
	if s == Left {
		gs = blas.Right
	}
	if ul == Lower {
		gu = blas.Upper
	}
	if d == Unit {
		gd = blas.Unit
	}
	blas64.Implementation().Dtrsm(gs, gu, gonumTrans(tA), gd, n, m, alpha, a, lda, b, ldb)
}

// wellConditionedTri makes the k×k matrix in a diagonally dominant so that
// triangular solves are accurate enough to compare elementwise.
func wellConditionedTri(a []float64, k, lda int) {
	for i := range k {
		a[i+i*lda] = float64(k) + 1 + a[i+i*lda]
	}
}

// testTriangle returns a random ka×ka triangle for Dtrsm tests (both
// triangles filled, leading dimension lda) that solves accurately enough to
// compare elementwise, and the same matrix as the reference should see it:
// with unit, a's diagonal is poisoned (Dtrsm must not read it) and aRef's is 1.
func testTriangle(rng *rand.Rand, ka, lda int, unit bool) (a, aRef []float64) {
	a = randMat(rng, ka, ka, lda)
	if unit {
		for j := range ka {
			for i := range ka {
				if i != j {
					a[i+j*lda] /= float64(ka)
				}
			}
		}
		for i := range ka {
			a[i+i*lda] = pad
		}
	} else {
		wellConditionedTri(a, ka, lda)
	}
	aRef = append([]float64(nil), a...)
	if unit {
		for i := range ka {
			aRef[i+i*lda] = 1
		}
	}
	return a, aRef
}

func TestDtrsm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dims := append(append([]int(nil), sizes...), 100, 130)
	for _, s := range []Side{Left, Right} {
		for _, ul := range []Uplo{Upper, Lower} {
			for _, tA := range transes {
				for _, d := range []Diag{NonUnit, Unit} {
					for _, ka := range dims {
						other := dims[rng.IntN(len(dims))]
						m, n := ka, other
						if s == Right {
							m, n = other, ka
						}
						alpha := []float64{1, -0.5, 0, 2}[rng.IntN(4)]
						lda, ldb := ka+rng.IntN(3), m+rng.IntN(3)
						a, aRef := testTriangle(rng, ka, lda, d == Unit)
						b := randMat(rng, m, n, ldb)
						want := append([]float64(nil), b...)
						refDtrsm(s, ul, tA, d, m, n, alpha, aRef, lda, want, ldb)
						Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
						name := fmt.Sprintf("Dtrsm(%c,%c,%c,%c,m=%d,n=%d,alpha=%v,lda=%d,ldb=%d)", s, ul, tA, d, m, n, alpha, lda, ldb)
						if diff := maxDiff(m, n, b, ldb, want, ldb); diff > 1e-12 {
							t.Fatalf("%s: max difference from gonum %g", name, diff)
						}
						checkPad(t, name+" B", b, m, n, ldb)
					}
				}
			}
		}
	}
}

func TestDtrsmPanics(t *testing.T) {
	a := make([]float64, 16)
	cases := map[string]func(){
		"bad side": func() { Dtrsm('X', Upper, NoTrans, Unit, 2, 2, 1, a, 2, a, 2) },
		"bad uplo": func() { Dtrsm(Left, 'X', NoTrans, Unit, 2, 2, 1, a, 2, a, 2) },
		"bad diag": func() { Dtrsm(Left, Upper, NoTrans, 'X', 2, 2, 1, a, 2, a, 2) },
		"n<0":      func() { Dtrsm(Left, Upper, NoTrans, Unit, 2, -2, 1, a, 2, a, 2) },
		"lda<m":    func() { Dtrsm(Left, Upper, NoTrans, Unit, 3, 2, 1, a, 2, a, 3) },
		"lda<n R":  func() { Dtrsm(Right, Upper, NoTrans, Unit, 2, 3, 1, a, 2, a, 2) },
		"short b":  func() { Dtrsm(Left, Upper, NoTrans, Unit, 4, 4, 1, a, 4, a[:15], 4) },
	}
	for name, f := range cases {
		mustPanic(t, name, f)
	}
}

// TestTrsmKernLower runs the kernel-based lower solve with every kernel
// this CPU has, on triangles around multiples of each kernel's tile and up
// to trsmKernMax, against gonum.
func TestTrsmKernLower(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kn := range availableKernels() {
		for _, m := range []int{1, 2, kn.mr - 1, kn.mr, kn.mr + 1, 3*kn.mr - 1, 3 * kn.mr, 100, 192, trsmKernMax} {
			for _, n := range []int{kn.nr, kn.nr + 1, 2*kn.nr - 1, 37} {
				for _, trans := range []bool{false, true} {
					for _, unit := range []bool{false, true} {
						alpha := []float64{1, -0.5, 2}[rng.IntN(3)]
						lda, ldb := m+rng.IntN(3), m+rng.IntN(3)
						a, aRef := testTriangle(rng, m, lda, unit)
						b := randMat(rng, m, n, ldb)
						want := append([]float64(nil), b...)
						ul, tA, d := Lower, NoTrans, NonUnit
						if trans {
							ul, tA = Upper, Trans
						}
						if unit {
							d = Unit
						}
						refDtrsm(Left, ul, tA, d, m, n, alpha, aRef, lda, want, ldb)
						trsmKernLower(kn, trans, unit, m, n, alpha, a, lda, b, ldb)
						name := fmt.Sprintf("%s: trsmKernLower(trans=%v,unit=%v,m=%d,n=%d,alpha=%v,lda=%d,ldb=%d)", kn.name, trans, unit, m, n, alpha, lda, ldb)
						if diff := maxDiff(m, n, b, ldb, want, ldb); diff > 1e-12 {
							t.Fatalf("%s: max difference from gonum %g", name, diff)
						}
						checkPad(t, name+" B", b, m, n, ldb)
					}
				}
			}
		}
	}
}
