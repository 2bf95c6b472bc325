package kern

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestSumVecMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 4099} {
		for _, off := range []int{0, 1, 3} { // unaligned starts
			a32 := make([]float32, n+off)
			b32 := make([]float32, n+off)
			a64 := make([]float64, n+off)
			b64 := make([]float64, n+off)
			for i := range a32 {
				a32[i], b32[i] = r.Float32()-0.5, r.Float32()-0.5
				a64[i], b64[i] = r.NormFloat64(), r.NormFloat64()
			}
			w32 := append([]float32(nil), b32...)
			w64 := append([]float64(nil), b64...)
			for i := off; i < n+off; i++ {
				w32[i] = a32[i] + w32[i]
				w64[i] = a64[i] + w64[i]
			}
			SumFloat32(a32[off:], b32[off:])
			SumFloat64(a64[off:], b64[off:])
			for i := range b32 {
				if b32[i] != w32[i] || b64[i] != w64[i] {
					t.Fatalf("n=%d off=%d i=%d: got %v/%v want %v/%v", n, off, i, b32[i], b64[i], w32[i], w64[i])
				}
			}
		}
	}
}

func TestSumTouchesOnlyInout(t *testing.T) {
	in := []float64{1, 2, 3, 4, 5}
	out := make([]float64, 3, 5)
	out = append(out[:3], 100, 100)[:3]
	SumFloat64(in, out)
	if out[:5][3] != 100 || out[2] != 3 {
		t.Fatalf("sum wrote past len(inout): %v", out[:5])
	}
}

func TestGenericKernels(t *testing.T) {
	in := []int32{5, -3, 7, 0, 9, 2, 1, 8, 6}
	for _, tc := range []struct {
		name string
		k    func(a, b []int32)
		f    func(a, b int32) int32
	}{
		{"sum", Sum[int32], func(a, b int32) int32 { return a + b }},
		{"prod", Prod[int32], func(a, b int32) int32 { return a * b }},
		{"min", Min[int32], func(a, b int32) int32 { return min(a, b) }},
		{"max", Max[int32], func(a, b int32) int32 { return max(a, b) }},
		{"and", And[int32], func(a, b int32) int32 { return a & b }},
		{"or", Or[int32], func(a, b int32) int32 { return a | b }},
		{"xor", Xor[int32], func(a, b int32) int32 { return a ^ b }},
	} {
		out := []int32{3, 3, -8, 4, 1, 2, 9, 9, -1}
		want := make([]int32, len(out))
		for i := range out {
			want[i] = tc.f(in[i], out[i])
		}
		tc.k(in, out)
		for i := range out {
			if out[i] != want[i] {
				t.Fatalf("%s: got %v want %v", tc.name, out, want)
			}
		}
	}
}

func TestLocPairs(t *testing.T) {
	in := []float64{3, 7, 5, 1, 2, 0, 9, 4}
	out := []float64{3, 2, 5, 4, 4, 6, 1, 5}
	mx := append([]float64(nil), out...)
	MaxLoc(in, mx)
	want := []float64{3, 2, 5, 1, 4, 6, 9, 4}
	for i := range want {
		if mx[i] != want[i] {
			t.Fatalf("maxloc got %v want %v", mx, want)
		}
	}
	mn := append([]float64(nil), out...)
	MinLoc(in, mn)
	want = []float64{3, 2, 5, 1, 2, 0, 1, 5}
	for i := range want {
		if mn[i] != want[i] {
			t.Fatalf("minloc got %v want %v", mn, want)
		}
	}
}

func TestF16RoundTripAll(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		back := F32ToF16(f)
		if f != f {
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, back)
		}
	}
	if F16ToF32(0x3c00) != 1 || F16ToF32(0xc000) != -2 || F16ToF32(0x0001) != float32(math.Ldexp(1, -24)) || F16ToF32(0x7bff) != 65504 {
		t.Fatal("known half values wrong")
	}
}

// nearestHalf is the reference: the closest representable half by exhaustive search, ties
// to the even encoding, values past the largest half rounding to Inf as IEEE 754 requires.
func nearestHalf(t *testing.T, vals []float64, codes []uint16, f float32) uint16 {
	x := math.Abs(float64(f))
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	i := sort.SearchFloat64s(vals, x)
	if i == len(vals) {
		return sign | 0x7c00
	}
	if i == 0 || vals[i] == x {
		return sign | codes[i]
	}
	lo, hi := vals[i-1], vals[i]
	switch {
	case x-lo < hi-x:
		return sign | codes[i-1]
	case x-lo > hi-x:
		return sign | codes[i]
	case codes[i-1]&1 == 0:
		return sign | codes[i-1]
	default:
		return sign | codes[i]
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	var vals []float64
	var codes []uint16
	for h := uint16(0); h <= 0x7c00; h++ { // all non-negative finite halves, then Inf as 65536
		v := float64(F16ToF32(h))
		if h == 0x7c00 {
			v = 65536
		}
		vals = append(vals, v)
		codes = append(codes, h)
	}
	r := rand.New(rand.NewPCG(3, 4))
	check := func(f float32) {
		if got, want := F32ToF16(f), nearestHalf(t, vals, codes, f); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for range 200000 {
		// Spread over the half range, its subnormals and past its overflow.
		e := r.IntN(50) - 30
		check(float32(math.Ldexp(r.Float64()*2-1, e)))
		check(math.Float32frombits(r.Uint32()&0x7fffffff&^(0xff<<23) | uint32(100+r.IntN(45))<<23))
	}
	// Exact ties between neighbouring halves (and between subnormals).
	for h := uint16(0); h < 0x7bff; h += 7 {
		mid := (float64(F16ToF32(h)) + float64(F16ToF32(h+1))) / 2
		check(float32(mid))
	}
	check(65520)
	check(65519.99)
	check(float32(math.Inf(-1)))
}

// TestSumF16 compares the vectorized half sum with the scalar widen-add-narrow on random
// halves (including subnormals, infinities and NaNs) at lengths around the vector width.
func TestSumF16(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 15, 16, 17, 33, 1000} {
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i], b[i] = uint16(r.Uint32()), uint16(r.Uint32())
		}
		want := append([]uint16(nil), b...)
		ReduceF16(a, want, Sum[float32])
		SumF16(a, b)
		for i := range b {
			nan := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
			if b[i] != want[i] && !(nan(b[i]) && nan(want[i])) {
				t.Fatalf("n=%d i=%d: %#04x + %#04x: got %#04x want %#04x", n, i, a[i], b[i], b[i], want[i])
			}
		}
	}
}

func TestBF16(t *testing.T) {
	for _, tc := range []struct {
		f    float32
		want uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {float32(math.Inf(1)), 0x7f80}} {
		if got := F32ToBF16(tc.f); got != tc.want {
			t.Errorf("F32ToBF16(%v) = %#04x want %#04x", tc.f, got, tc.want)
		}
	}
	for h := range 1 << 16 {
		f := BF16ToF32(uint16(h))
		if f == f && F32ToBF16(f) != uint16(h) {
			t.Fatalf("bf16 %#04x round trip", h)
		}
	}
	if nan := F32ToBF16(float32(math.NaN())); BF16ToF32(nan) == BF16ToF32(nan) {
		t.Fatal("NaN lost")
	}
}

func TestReduceHalf(t *testing.T) {
	n := 1000 // more than one chunk
	a, b := make([]uint16, n), make([]uint16, n)
	want := make([]uint16, n)
	for i := range n {
		x, y := float32(i%37)*0.25, float32(i%11)-3
		a[i], b[i] = F32ToF16(x), F32ToF16(y)
		want[i] = F32ToF16(x + y)
	}
	ReduceF16(a, b, SumFloat32)
	for i := range n {
		if b[i] != want[i] {
			t.Fatalf("i=%d got %#04x want %#04x", i, b[i], want[i])
		}
	}
	for i := range n {
		a[i], b[i] = F32ToBF16(float32(i)), F32ToBF16(2)
	}
	ReduceBF16(a, b, Max[float32])
	for i := range n {
		if BF16ToF32(b[i]) != max(BF16ToF32(a[i]), 2) {
			t.Fatalf("bf16 max i=%d", i)
		}
	}
}

func benchSum64(b *testing.B, n int, k func(a, b []float64)) {
	x, y := make([]float64, n), make([]float64, n)
	for i := range x { // touch the pages before timing: first touch runs at 0.35 GB/s here
		x[i], y[i] = 1, 2
	}
	b.SetBytes(int64(n * 8 * 3)) // two reads and one write per element
	for b.Loop() {
		k(x, y)
	}
}

func BenchmarkSumFloat64_32K(b *testing.B)   { benchSum64(b, 4<<10, SumFloat64) }
func BenchmarkSumFloat64_8M(b *testing.B)    { benchSum64(b, 1<<20, SumFloat64) }
func BenchmarkSumGeneric64_32K(b *testing.B) { benchSum64(b, 4<<10, Sum[float64]) }
func BenchmarkSumGeneric64_8M(b *testing.B)  { benchSum64(b, 1<<20, Sum[float64]) }

func BenchmarkSumFloat32_4M(b *testing.B) {
	x, y := make([]float32, 1<<20), make([]float32, 1<<20)
	for i := range x {
		x[i], y[i] = 1, 2
	}
	b.SetBytes(int64(len(x) * 4 * 3))
	for b.Loop() {
		SumFloat32(x, y)
	}
}

func BenchmarkSumF16_1M(b *testing.B) {
	x, y := make([]uint16, 1<<19), make([]uint16, 1<<19)
	for i := range x {
		x[i], y[i] = 0x3c00, 0x4000
	}
	b.SetBytes(int64(len(x) * 2 * 3))
	for b.Loop() {
		SumF16(x, y)
	}
}

func BenchmarkReduceF16Sum_1M(b *testing.B) {
	x, y := make([]uint16, 1<<19), make([]uint16, 1<<19)
	for i := range x {
		x[i], y[i] = 0x3c00, 0x4000
	}
	b.SetBytes(int64(len(x) * 2 * 3))
	for b.Loop() {
		ReduceF16(x, y, SumFloat32)
	}
}
