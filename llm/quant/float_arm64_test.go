//go:build arm64 && !noasm

package quant

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// mul32 is a*b rounded once to float32 (the float64 product of two float32s is exact).
func mul32(a, b float32) float32 { return float32(float64(a) * float64(b)) }

// The twins of float_arm64.s and its Go tails, written from the AVX2 kernels' operations:
// lanes partial sums (element i in lane i%lanes, one fused multiply-add each) over the first
// m = len(a) rounded down to a multiple of lanes, folded as eight-lane registers are
// ((y0+y1) or ((y0+y1)+(y2+y3)), then the two halves, then two horizontal adds).
func twinLanes(a, b []float32, lanes int) (float32, int) {
	m := len(a) &^ (lanes - 1)
	if m == 0 {
		return 0, 0
	}
	l := make([]float32, lanes)
	for i := 0; i < m; i++ {
		l[i%lanes] = fma32(a[i], b[i], l[i%lanes])
	}
	var v8 [8]float32
	for j := range v8 {
		if lanes == 16 {
			v8[j] = l[j] + l[8+j]
		} else {
			v8[j] = (l[j] + l[8+j]) + (l[16+j] + l[24+j])
		}
	}
	var u [4]float32
	for j := range u {
		u[j] = v8[j] + v8[4+j]
	}
	return (u[0] + u[1]) + (u[2] + u[3]), m
}

// twinTail sums rounded products in k lanes (dotU16Generic: 1, dotF16Generic: 2,
// dotF32Generic: 4), lanes added as those functions add them.
func twinTail(a, b []float32, k int) float32 {
	var l [4]float32
	i := 0
	for ; i+k <= len(a); i += k {
		for j := 0; j < k; j++ {
			l[j] += mul32(a[i+j], b[i+j])
		}
	}
	for ; i < len(a); i++ {
		l[0] += mul32(a[i], b[i])
	}
	switch k {
	case 1:
		return l[0]
	case 2:
		return l[0] + l[1]
	}
	return (l[0] + l[1]) + (l[2] + l[3])
}

func twinDot(a, b []float32, lanes, k int) float32 {
	s, m := twinLanes(a, b, lanes)
	if m == 0 {
		return twinTail(a, b, k)
	}
	if m < len(a) {
		s += twinTail(a[m:], b[m:], k)
	}
	return s
}

// The three dot products: DotF16, the F16 weight row, the F32 weight row.
func twinDotF16(a, b []float32) float32    { return twinDot(a, b, 16, 1) }
func twinDotF16Row(a, b []float32) float32 { return twinDot(a, b, 16, 2) }
func twinDotF32(a, b []float32) float32    { return twinDot(a, b, 32, 4) }

// twinAxpy: fused in the first len(out) rounded down to a multiple of 8, then rounded product
// plus out.
func twinAxpy(out []float32, a float32, v []float32) {
	m := len(out) &^ 7
	for i := range out {
		if i < m {
			out[i] = fma32(a, v[i], out[i])
		} else {
			out[i] += mul32(a, v[i])
		}
	}
}

func widen(h []uint16) []float32 {
	f := make([]float32, len(h))
	for i, x := range h {
		f[i] = F16ToF32(x)
	}
	return f
}

// randHalves draws halves: normal values, and with extremes on, also subnormals, the largest
// finite, zeros of both signs, infinities and NaNs.
func randHalves(r *rand.Rand, n int, extremes bool) []uint16 {
	h := make([]uint16, n)
	for i := range h {
		h[i] = F32ToF16(float32(r.NormFloat64()))
		if extremes && r.IntN(4) == 0 {
			sign := uint16(r.IntN(2)) << 15
			switch r.IntN(6) {
			case 0, 1:
				h[i] = sign | uint16(1+r.IntN(0x3ff)) // subnormal
			case 2:
				h[i] = sign | 0x7bff
			case 3:
				h[i] = sign
			case 4:
				if r.IntN(8) == 0 {
					h[i] = sign | 0x7c00
				}
			case 5:
				if r.IntN(16) == 0 {
					h[i] = sign | 0x7e00 | uint16(r.IntN(0x200))
				}
			}
		}
	}
	return h
}

func randF32s(r *rand.Rand, n int, extremes bool) []float32 {
	f := make([]float32, n)
	for i := range f {
		f[i] = float32(r.NormFloat64())
		if extremes && r.IntN(4) == 0 {
			switch r.IntN(5) {
			case 0:
				f[i] = float32(r.NormFloat64()) * 1e-40 // subnormal
			case 1:
				f[i] = float32(r.NormFloat64()) * 1e37 // products overflow
			case 2:
				f[i] = float32(math.Copysign(0, r.NormFloat64()))
			case 3:
				if r.IntN(8) == 0 {
					f[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				}
			case 4:
				f[i] = math.Float32frombits(0x7fc00000 | uint32(r.IntN(1<<22)))
			}
		}
	}
	return f
}

// fma32 against a 1000-bit exact a*b+c rounded to nearest even by math/big.
func TestFMA32Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(1000).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(1000).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(1000).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	for i := 0; i < 20000; i++ {
		v := randF32s(r, 3, false)
		a, b, c := v[0], v[1], v[2]
		switch i % 4 {
		case 1: // c far below a*b: the exact sum is a*b plus a sliver, the double-rounding case
			c = math.Float32frombits(math.Float32bits(a*b)&0x80000000|0x800000) * float32(r.NormFloat64())
		case 2: // a*b just below a float32 halfway point
			c = -a * b * (1 + float32(r.NormFloat64())*1e-7)
		case 3: // subnormal results
			a, b, c = a*1e-20, b*1e-20, c*1e-39
		}
		if got, want := fma32(a, b, c), exact(a, b, c); got != want && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g, exact %g", a, b, c, got, want)
		}
		if got := fma32(a, b, c); got == 0 && math.Signbit(float64(got)) != math.Signbit(float64(float32(float64(a)*float64(b)+float64(c)))) {
			t.Fatalf("fma32(%g, %g, %g): sign of zero", a, b, c)
		}
	}
}

// Every NEON float kernel bit for bit with its twin: lengths 1..70 (tails of every size, the
// kernels' steps being 8, 16 and 32), random and extreme values.
func TestFloatKernelsMatchTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for n := 1; n <= 70; n++ {
		for trial := 0; trial < 6; trial++ {
			ext := trial >= 3
			a, b := randHalves(r, n, ext), randHalves(r, n, ext)
			fa, fb := widen(a), widen(b)
			if got, want := DotF16(a, b), twinDotF16(fa, fb); !sameFloat(got, want) {
				t.Fatalf("DotF16 n=%d trial %d: %v, twin %v", n, trial, got, want)
			}
			row := make([]byte, 2*n)
			for i, h := range a {
				binary.LittleEndian.PutUint16(row[2*i:], h)
			}
			if got, want := dotF16(row, b), twinDotF16Row(fa, fb); !sameFloat(got, want) {
				t.Fatalf("dotF16 n=%d trial %d: %v, twin %v", n, trial, got, want)
			}

			out := randF32s(r, n, ext)
			want := append([]float32(nil), out...)
			c := float32(r.NormFloat64())
			AxpyF16(out, c, b)
			twinAxpy(want, c, fb)
			for i := range out {
				if !sameFloat(out[i], want[i]) {
					t.Fatalf("AxpyF16 n=%d trial %d [%d]: %v, twin %v", n, trial, i, out[i], want[i])
				}
			}

			w, x := randF32s(r, n, ext), randF32s(r, n, ext)
			wb := make([]byte, 4*n)
			for i, f := range w {
				binary.LittleEndian.PutUint32(wb[4*i:], math.Float32bits(f))
			}
			if got, want := dotF32(wb, x), twinDotF32(w, x); !sameFloat(got, want) {
				t.Fatalf("dotF32 n=%d trial %d: %v, twin %v", n, trial, got, want)
			}

			src := randF32s(r, n, ext)
			if ext {
				for i := range src {
					if r.IntN(3) == 0 { // around the half range: overflow, subnormal, rounding ties
						src[i] *= []float32{65504, 6e-5, 6e-8, 1.0 / 1024}[r.IntN(4)]
					}
				}
			}
			h := make([]uint16, n)
			F32ToF16s(h, src)
			for i := range h {
				if wantH := F32ToF16(src[i]); h[i] != wantH {
					t.Fatalf("F32ToF16s n=%d trial %d [%d] of %g: %#04x, want %#04x", n, trial, i, src[i], h[i], wantH)
				}
			}
			rounded := append([]float32(nil), src...)
			ScaleRoundF16s(rounded, c)
			for i := range rounded {
				if wantR := F16ToF32(F32ToF16(c * src[i])); !sameFloat(rounded[i], wantR) {
					t.Fatalf("ScaleRoundF16s n=%d trial %d [%d] of %g: %v, want %v", n, trial, i, src[i], rounded[i], wantR)
				}
			}
		}
	}
}

// The attention row kernels against the twins, head sizes with (multiples of 16) and without
// the NEON rows kernels.
func TestF16RowsMatchTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, hd := range []int{8, 16, 24, 32, 48, 64, 80, 128} {
		for _, n := range []int{1, 2, 5, 33} {
			for trial := 0; trial < 2; trial++ {
				stride, off := 2*hd+8, hd+4
				cache := randHalves(r, n*stride, trial == 1)
				q := randHalves(r, hd, trial == 1)
				fq := widen(q)
				const scale = 0.125
				got := make([]float32, n)
				mx := DotF16Rows(got, q, cache, stride, off, scale)
				wantMax := float32(math.Inf(-1))
				w := randF32s(r, n, false)
				acc := randF32s(r, hd, false)
				want := append([]float32(nil), acc...)
				AxpyF16Rows(acc, w, cache, stride, off)
				for p := 0; p < n; p++ {
					kv := widen(cache[p*stride+off : p*stride+off+hd])
					d := twinDotF16(fq, kv) * scale
					if !sameFloat(got[p], d) {
						t.Fatalf("hd=%d n=%d trial %d: DotF16Rows[%d] = %v, twin %v", hd, n, trial, p, got[p], d)
					}
					wantMax = max(wantMax, d)
					twinAxpy(want, w[p], kv)
				}
				if !sameFloat(mx, wantMax) {
					t.Fatalf("hd=%d n=%d trial %d: DotF16Rows max %v, twin %v", hd, n, trial, mx, wantMax)
				}
				for j := range acc {
					if !sameFloat(acc[j], want[j]) {
						t.Fatalf("hd=%d n=%d trial %d: AxpyF16Rows[%d] = %v, twin %v", hd, n, trial, j, acc[j], want[j])
					}
				}
			}
		}
	}
}

// MatVec over F32 and F16 weights runs the NEON rows: each row equals the twin.
func TestFloatMatVecMatchesTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16} {
		for _, cols := range []int{16, 33, 64, 100, 130} {
			rows := 9
			src := randF32s(r, rows*cols, false)
			data := make([]byte, rows*cols*typ.TypeSize())
			Quantize(typ, src, data)
			m, err := NewMatrix(typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			xf := randF32s(r, cols, false)
			var x Vec
			x.Load(typ, xf)
			y := make([]float32, rows)
			MatVec(nil, m, &x, y)
			for i := 0; i < rows; i++ {
				var want float32
				if typ == gguf.F32 {
					want = twinDotF32(src[i*cols:(i+1)*cols], xf)
				} else {
					w := make([]float32, cols)
					Dequantize(typ, m.Row(i), w)
					want = twinDotF16Row(w, widen(x.U16))
				}
				if y[i] != want {
					t.Fatalf("%s cols=%d row %d: MatVec %v, twin %v", typ, cols, i, y[i], want)
				}
			}
		}
	}
}
