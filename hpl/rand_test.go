package hpl

import (
	"math"
	"math/big"
	"testing"
)

// mulMod64 multiplies with 16-bit limbs as netlib's HPL_lmul does, as an independent check of
// uint64 wrap-around arithmetic.
func mulMod64(x, y uint64) uint64 {
	var res [5]uint64
	limb := func(v uint64, i int) uint64 { return (v >> (16 * i)) & 0xffff }
	for c := range 4 {
		for r := 0; r <= c; r++ {
			res[c] += limb(x, r) * limb(y, c-r)
		}
		res[c+1] += res[c] >> 16
		res[c] &= 0xffff
	}
	return res[0] | res[1]<<16 | res[2]<<32 | res[3]<<48
}

func TestSequenceConstants(t *testing.T) {
	if randMult != 6364136223846793005 {
		t.Fatalf("multiplier %d", randMult)
	}
	x := uint64(Seed)
	for range 1000 {
		y := mulMod64(x, randMult) + randAdd
		if z := x*randMult + randAdd; z != y {
			t.Fatalf("uint64 step %d, limb step %d", z, y)
		}
		x = y
	}
}

func TestRandValueRange(t *testing.T) {
	for _, x := range []uint64{0, 1, 1 << 63, math.MaxUint64, 0xdeadbeefcafebabe} {
		v := randValue(x)
		// Exactly 0.5 - x/2^64 up to one rounding of the sum.
		want, _ := new(big.Float).Sub(big.NewFloat(0.5),
			new(big.Float).Quo(new(big.Float).SetUint64(x), new(big.Float).SetMantExp(big.NewFloat(1), 64))).Float64()
		if v < -0.5 || v > 0.5 || math.Abs(v-want) > 1e-16 {
			t.Fatalf("randValue(%#x) = %v, want %v in [-0.5, 0.5] (netlib rounds the top state to -0.5)", x, v, want)
		}
	}
	if randValue(0) != 0.5 {
		t.Fatalf("randValue(0) = %v", randValue(0))
	}
}

// The local pieces of every grid assemble to the matrix the plain sequence gives: entry (i, j)
// is number 1 + i + j*M after the seed.
func TestMatGenGridIndependent(t *testing.T) {
	const m, n = 37, 38
	want := make([]float64, m*n)
	x := uint64(Seed)
	for j := range n {
		for i := range m {
			x = x*randMult + randAdd
			want[i+j*m] = randValue(x)
		}
	}
	for _, g := range [][3]int{{1, 1, 1}, {1, 1, 4}, {2, 3, 4}, {3, 2, 5}, {4, 1, 3}, {1, 4, 2}, {2, 2, 40}} {
		P, Q, nb := g[0], g[1], g[2]
		for pr := range P {
			for pc := range Q {
				mp, nq := numroc(m, nb, pr, P), numroc(n, nb, pc, Q)
				lda := max(1, mp) + 3
				a := make([]float64, lda*max(1, nq))
				MatGen(m, n, nb, P, Q, pr, pc, a, lda, Seed)
				for jl := range nq {
					for il := range mp {
						gi, gj := l2g(il, nb, pr, P), l2g(jl, nb, pc, Q)
						if a[il+jl*lda] != want[gi+gj*m] {
							t.Fatalf("grid %dx%d nb %d proc (%d,%d): A(%d,%d) = %v, want %v", P, Q, nb, pr, pc,
								gi, gj, a[il+jl*lda], want[gi+gj*m])
						}
					}
				}
			}
		}
	}
}

func TestBlockCyclicMaps(t *testing.T) {
	for _, c := range [][3]int{{10, 3, 2}, {7, 7, 3}, {100, 8, 5}, {0, 4, 2}, {5, 10, 3}} {
		n, nb, np := c[0], c[1], c[2]
		total := 0
		for p := range np {
			total += numroc(n, nb, p, np)
			for il := range numroc(n, nb, p, np) {
				g := l2g(il, nb, p, np)
				if g2p(g, nb, np) != p || g2l(g, nb, np) != il {
					t.Fatalf("n=%d nb=%d np=%d p=%d il=%d -> g=%d -> p=%d il=%d", n, nb, np, p, il, g,
						g2p(g, nb, np), g2l(g, nb, np))
				}
			}
		}
		if total != n {
			t.Fatalf("numroc sums to %d, want %d", total, n)
		}
	}
}
