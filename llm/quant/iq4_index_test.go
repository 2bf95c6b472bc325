package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// iq4IndexBisect is ggml's best_index_int8 as written there: bisection over the levels, then
// the nearer of the two around x (ties to the upper one).
func iq4IndexBisect(x float32) uint8 {
	v := &iq4Values
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// The table lookup picks what the bisection picks: at and a few ulps around every integer and
// every midpoint between levels in [-130, 116], at NaN and the infinities, and at random values.
func TestIQ4IndexMatchesBisection(t *testing.T) {
	check := func(x float32) {
		if got, want := iq4Index(x), iq4IndexBisect(x); got != want && !math.IsNaN(float64(x)) {
			t.Fatalf("iq4Index(%v) = %d, bisection %d", x, got, want)
		}
	}
	for k := -260; k <= 232; k++ { // k/2: every integer and half-integer
		c := float32(k) / 2
		for _, x := range []float32{c, math.Nextafter32(c, -1000), math.Nextafter32(c, 1000)} {
			y := x
			for i := 0; i < 4; i++ {
				check(y)
				y = math.Nextafter32(y, 1000)
			}
		}
	}
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))} {
		check(x)
	}
	if iq4Index(float32(math.NaN())) != 15 {
		t.Fatalf("iq4Index(NaN) = %d, the bisection ends at 15", iq4Index(float32(math.NaN())))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1_000_000; i++ {
		check(float32(r.Float64()*260 - 135))
	}
}

func BenchmarkQuantizeIQ4_XS(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 256*64)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]byte, len(x)/256*BlockIQ4_XS)
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		for i := 0; i < len(x)/256; i++ {
			quantizeIQ4_XSBlock(x[256*i:256*i+256], y[BlockIQ4_XS*i:])
		}
	}
}
