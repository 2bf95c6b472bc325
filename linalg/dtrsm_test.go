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
						a := randMat(rng, ka, ka, lda)
						if d == Unit {
							// Unit diagonal is not referenced: poison it.
							for i := range ka {
								a[i+i*lda] = pad
							}
						} else {
							wellConditionedTri(a, ka, lda)
						}
						if d == Unit {
							// Keep the unit-diagonal triangle well conditioned too.
							for j := range ka {
								for i := range ka {
									if i != j {
										a[i+j*lda] /= float64(ka)
									}
								}
							}
						}
						b := randMat(rng, m, n, ldb)
						want := append([]float64(nil), b...)
						aRef := append([]float64(nil), a...)
						if d == Unit {
							for i := range ka {
								aRef[i+i*lda] = 1
							}
						}
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
