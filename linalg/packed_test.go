package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDgemmPackedA checks DgemmPackedA on an operand packed by PackA against gonum's Dgemm,
// with every micro-kernel this CPU runs, one and two workers, tiny and real cache blocks,
// row counts around the tile, both forms of B, and the quick returns.
func TestDgemmPackedA(t *testing.T) {
	if !goBackend {
		t.Skip("this backend takes no packed operands")
	}
	saved := kern
	defer func() { kern = saved }()
	rng := rand.New(rand.NewPCG(41, 42))
	for _, kn := range availableKernels() {
		for _, tiny := range []bool{false, true} {
			if !tiny && testing.Short() {
				continue // the tiny blocks cross every boundary; the real ones only cost time
			}
			if tiny {
				kn.mc, kn.kc, kn.nc = 2*kn.mr, 37, 3*kn.nr
			}
			kern = kn
			for _, th := range []int{1, 2} {
				func() {
					defer SetThreads(SetThreads(th))
					// 4*mc+1 rows: enough row blocks for two workers to split them (with the
					// tiny blocks; with the real ones it would only cost time).
					ms := []int{1, kn.mr - 1, kn.mr, 3*kn.mr + 1, kn.mc + 5}
					if tiny {
						ms = append(ms, 4*kn.mc+1)
					}
					for _, m := range ms {
						for _, k := range []int{1, 5, min(37, kn.kc), kn.kc} {
							for _, n := range []int{1, kn.nr + 1, kn.nc + 3} {
								for _, tB := range transes {
									testDgemmPackedACase(t, rng, tB, m, n, k, -1, 1)
								}
							}
						}
					}
					testDgemmPackedACase(t, rng, NoTrans, 50, 40, 30, 0.5, 0)
					testDgemmPackedACase(t, rng, NoTrans, 50, 40, 30, 2, -0.5)
					testDgemmPackedACase(t, rng, NoTrans, 50, 40, 30, 0, 2)
					testDgemmPackedACase(t, rng, NoTrans, 0, 40, 30, 1, 1)
					testDgemmPackedACase(t, rng, NoTrans, 50, 0, 30, 1, 1)
					testDgemmPackedACase(t, rng, NoTrans, 50, 40, 0, 1, 0.5)
				}()
			}
		}
	}
}

func testDgemmPackedACase(t *testing.T, rng *rand.Rand, tB Transpose, m, n, k int, alpha, beta float64) {
	t.Helper()
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	lda, ldb, ldc := max(1, m)+3, max(1, br)+1, max(1, m)+2
	a := randMat(rng, m, k, lda)
	b := randMat(rng, br, bc, ldb)
	c := randMat(rng, m, n, ldc)
	want := append([]float64(nil), c...)
	refDgemm(NoTrans, tB, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
	plen := PackedALen(m, k)
	if plen < 0 {
		t.Fatalf("PackedALen(%d, %d) = -1 with kc = %d", m, k, kern.kc)
	}
	pa := make([]float64, plen+1)
	pa[plen] = pad
	PackA(m, k, a, lda, pa[:plen])
	if math.Float64bits(pa[plen]) != math.Float64bits(pad) {
		t.Fatalf("PackA(%d, %d) wrote past PackedALen", m, k)
	}
	DgemmPackedA(tB, m, n, k, alpha, pa[:plen], b, ldb, beta, c, ldc)
	name := fmt.Sprintf("%s DgemmPackedA(%c,m=%d,n=%d,k=%d,alpha=%v,beta=%v)", kern.name, tB, m, n, k, alpha, beta)
	if d := maxDiff(m, n, c, ldc, want, ldc); d > 1e-13*float64(k+2) {
		t.Fatalf("%s: max difference from gonum %g", name, d)
	}
	checkPad(t, name+" C", c, m, n, ldc)
}

// TestPackedALimits checks what PackedALen refuses and that misuse panics with the
// routine's name rather than reading out of bounds.
func TestPackedALimits(t *testing.T) {
	if !goBackend {
		if PackedALayout() != 0 || PackedALen(10, 4) != -1 {
			t.Fatalf("PackedALayout() = %d, PackedALen(10, 4) = %d, want 0 and -1 on this backend", PackedALayout(), PackedALen(10, 4))
		}
		return
	}
	if PackedALayout() != kern.mr {
		t.Fatalf("PackedALayout() = %d, want the kernel's %d rows", PackedALayout(), kern.mr)
	}
	if got := PackedALen(10, kern.kc+1); got != -1 {
		t.Errorf("PackedALen(10, kc+1) = %d, want -1", got)
	}
	if got, want := PackedALen(kern.mr+1, 3), 2*kern.mr*3; got != want {
		t.Errorf("PackedALen(mr+1, 3) = %d, want %d", got, want)
	}
	a := make([]float64, 100*4)
	c := make([]float64, 100*4)
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"short dst", "len(dst)", func() { PackA(100, 4, a, 100, make([]float64, 10)) }},
		{"deep k", "PackedALen is -1", func() { PackA(1, kern.kc+1, make([]float64, kern.kc+1), 1, nil) }},
		{"short pa", "len(pa)", func() { DgemmPackedA(NoTrans, 100, 4, 4, 1, make([]float64, 10), a, 4, 1, c, 100) }},
		{"bad ldc", "ldc", func() { DgemmPackedA(NoTrans, 100, 4, 4, 1, make([]float64, PackedALen(100, 4)), a, 4, 1, c, 10) }},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: panic %v, want one naming %q", tc.name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
