package model

import (
	"math"
	"testing"
)

// TestExpf checks the SiLU's float32 exponential against math.Exp rounded to float32: within 2
// ulp over the range it computes itself, exact outside it, and NaN for NaN.
func TestExpf(t *testing.T) {
	ulps := func(got, want float32) int64 {
		d := int64(math.Float32bits(got)) - int64(math.Float32bits(want))
		return max(d, -d)
	}
	worst, at := int64(0), float32(0)
	for x := float32(-87); x <= 88; x += 0.000731 {
		want := float32(math.Exp(float64(x)))
		if d := ulps(expf(x), want); d > worst {
			worst, at = d, x
		}
	}
	if worst > 2 {
		t.Errorf("expf(%v) = %v, math.Exp %v: %d ulp apart (want <= 2)", at, expf(at), float32(math.Exp(float64(at))), worst)
	}
	for _, x := range []float32{-1000, -104, -87.5, 88.5, 88.72, 89, 1000, float32(math.Inf(1)), float32(math.Inf(-1))} {
		if got, want := expf(x), float32(math.Exp(float64(x))); got != want {
			t.Errorf("expf(%v) = %v, want %v", x, got, want)
		}
	}
	if nan := expf(float32(math.NaN())); nan == nan {
		t.Errorf("expf(NaN) = %v, want NaN", nan)
	}
}
