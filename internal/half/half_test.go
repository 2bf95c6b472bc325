package half

import (
	"math"
	"testing"
)

// Every binary16 value survives float32 and back; the midpoint between two neighbours rounds
// to the one with an even encoding; values past the largest finite half round to infinity.
func TestF16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		if math.IsNaN(float64(f)) {
			if h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
				t.Fatalf("%#04x widened to NaN", h)
			}
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x narrowed to %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != h {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, g)
		}
		next := h + 1
		if h&0x7fff >= 0x7bff || h == 0x7fff || h == 0xffff { // the largest finite, infinities
			continue
		}
		a, b := float64(f), float64(F16ToF32(next))
		mid := float32((a + b) / 2) // exact in float32: halves have 11 significant bits
		want := h
		if h&1 == 1 {
			want = next
		}
		if g := F32ToF16(mid); g != want {
			t.Fatalf("midpoint of %#04x and %#04x (%v) -> %#04x, want %#04x", h, next, mid, g, want)
		}
	}
	if g := F32ToF16(65520); g != 0x7c00 {
		t.Fatalf("65520 -> %#04x, want +Inf", g)
	}
	if g := F32ToF16(65519); g != 0x7bff {
		t.Fatalf("65519 -> %#04x, want 65504", g)
	}
}

func TestBF16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(F32ToBF16(f)))) {
				t.Fatalf("NaN %#04x lost", h)
			}
			continue
		}
		if g := F32ToBF16(f); g != h {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, g)
		}
	}
	// 1 + 2^-8 lies halfway between 1 and the next bfloat16: ties go to the even encoding (1).
	if g := F32ToBF16(1 + 1.0/256); g != 0x3f80 {
		t.Fatalf("tie rounded to %#04x", g)
	}
	if g := F32ToBF16(1 + 3.0/256); g != 0x3f82 {
		t.Fatalf("tie rounded to %#04x", g)
	}
}
