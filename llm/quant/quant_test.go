package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

func TestF16Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f { // NaN: must stay NaN
			if g := F16ToF32(F32ToF16(f)); g == g {
				t.Fatalf("NaN %#x round-trips to %v", h, g)
			}
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, back)
		}
	}
}

// F32ToF16 picks the nearest half, ties to even: check against neighbours for random floats.
func TestF32ToF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-25)))
		h := F32ToF16(f)
		got := float64(F16ToF32(h))
		if math.IsInf(got, 0) {
			if math.Abs(float64(f)) < 65504 {
				t.Fatalf("%v -> inf", f)
			}
			continue
		}
		for _, nb := range []uint16{h + 1, h - 1} {
			alt := float64(F16ToF32(nb))
			if math.IsNaN(alt) || math.IsInf(alt, 0) || (nb^h)&0x8000 != 0 {
				continue
			}
			de, da := math.Abs(got-float64(f)), math.Abs(alt-float64(f))
			if da < de || (da == de && h&1 == 1) {
				t.Fatalf("%v -> %#x (%v), neighbour %#x (%v) is better", f, h, got, nb, alt)
			}
		}
	}
}

func TestBF16(t *testing.T) {
	cases := map[float32]uint16{1: 0x3f80, -2: 0xc000, 1.00390625: 0x3f80 /* tie, even */, 1.01171875: 0x3f82}
	for f, want := range cases {
		if got := F32ToBF16(f); got != want {
			t.Errorf("F32ToBF16(%v) = %#x, want %#x", f, got, want)
		}
	}
}

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// randBlocks makes random blocks of a quantized type with sane f16 scales (and minima).
func randBlocks(r *rand.Rand, t gguf.Type, n int) []byte {
	nb, _ := t.RowBytes(int64(n))
	b := make([]byte, nb)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	bs := t.TypeSize()
	for off := 0; off < len(b); off += bs {
		d := F32ToF16(float32(r.Float64()*0.01 + 0.001))
		switch t {
		case gguf.Q4_K, gguf.Q5_K:
			binary.LittleEndian.PutUint16(b[off:], d)
			binary.LittleEndian.PutUint16(b[off+2:], F32ToF16(float32(r.Float64()*0.01)))
		case gguf.Q6_K:
			binary.LittleEndian.PutUint16(b[off+208:], d)
		case gguf.Q3_K:
			binary.LittleEndian.PutUint16(b[off+108:], d)
		case gguf.Q2_K:
			binary.LittleEndian.PutUint16(b[off+80:], d)
			binary.LittleEndian.PutUint16(b[off+82:], F32ToF16(float32(r.Float64()*0.01)))
		case gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.IQ4_XS, gguf.Q5_0:
			binary.LittleEndian.PutUint16(b[off:], d)
		case gguf.Q4_1, gguf.Q5_1:
			binary.LittleEndian.PutUint16(b[off:], d)
			binary.LittleEndian.PutUint16(b[off+2:], F32ToF16(float32(-r.Float64()*0.01)))
		}
	}
	return b
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := randVec(r, 1024)
	for _, tc := range []struct {
		t   gguf.Type
		tol float64 // relative to the block's absolute max
	}{{gguf.F32, 0}, {gguf.F16, 1e-3}, {gguf.BF16, 8e-3}, {gguf.Q8_0, 1.0 / 127}, {gguf.Q4_0, 1.0 / 8}} {
		nb, _ := tc.t.RowBytes(int64(len(x)))
		q := make([]byte, nb)
		if err := Quantize(tc.t, x, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := Dequantize(tc.t, q, y); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(x); b += 32 {
			var amax float64
			for _, v := range x[b : b+32] {
				amax = max(amax, math.Abs(float64(v)))
			}
			for i := b; i < b+32; i++ {
				if e := math.Abs(float64(x[i] - y[i])); e > tc.tol*amax*1.01+1e-7 {
					t.Fatalf("%s: element %d: %v -> %v (error %g, bound %g)", tc.t, i, x[i], y[i], e, tc.tol*amax)
				}
			}
		}
	}
}

// Known Q4_0 and Q8_0 blocks decoded by hand from the layout.
func TestKnownBlocks(t *testing.T) {
	q4 := make([]byte, 18)
	binary.LittleEndian.PutUint16(q4, F32ToF16(0.5))
	q4[2] = 0x0f | 0x00<<4 // element 0: 15-8 = 7, element 16: 0-8 = -8
	y := make([]float32, 32)
	Dequantize(gguf.Q4_0, q4, y)
	if y[0] != 3.5 || y[16] != -4 || y[1] != -4 {
		t.Errorf("Q4_0 block decoded to %v", y)
	}
	q8 := make([]byte, 34)
	binary.LittleEndian.PutUint16(q8, F32ToF16(0.25))
	q8[2], q8[33] = 0x80, 4
	Dequantize(gguf.Q8_0, q8, y)
	if y[0] != -32 || y[31] != 1 {
		t.Errorf("Q8_0 block decoded to %v", y)
	}
	// llama.cpp's activation rule: d = amax/127, values scaled by 127/amax, ties to even.
	x := make([]float32, 32)
	x[0], x[1], x[2] = 127, 0.5, 1.5
	var v Vec
	v.Load(gguf.Q8_0, x)
	if q := v.Q8; int8(q[2]) != 127 || q[3] != 0 || q[4] != 2 {
		t.Errorf("Q8_0 activation quantized to %v", q[2:5])
	}
	// Its weight rule (quantize_row_q8_0_ref): ties away from zero.
	Quantize(gguf.Q8_0, x, q8)
	if int8(q8[2]) != 127 || q8[3] != 1 || q8[4] != 2 {
		t.Errorf("Q8_0 weights quantized to %v", q8[2:5])
	}
}

// Every kernel against dequantize-then-dot in float64 with the activation as the kernel sees
// it (after conversion to the weight type's vector type).
func TestDotAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1024
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		for trial := 0; trial < 20; trial++ {
			var row []byte
			switch typ {
			case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
				row = randBlocks(r, typ, n)
			default:
				nb, _ := typ.RowBytes(n)
				row = make([]byte, nb)
				Quantize(typ, randVec(r, n), row)
			}
			x := randVec(r, n)
			var v Vec
			if err := v.Load(typ, x); err != nil {
				t.Fatal(err)
			}
			xs := make([]float32, n)
			switch v.Type {
			case gguf.F32:
				copy(xs, v.F32)
			case gguf.F16, gguf.BF16:
				for i, h := range v.U16 {
					if v.Type == gguf.F16 {
						xs[i] = F16ToF32(h)
					} else {
						xs[i] = BF16ToF32(h)
					}
				}
			case gguf.Q8_0, gguf.Q8_1:
				Dequantize(gguf.Q8_0, v.Q8, xs)
			case gguf.Q8_K:
				for b, blk := range v.K {
					for j, q := range blk.Qs {
						xs[b*QK_K+j] = blk.D * float32(q)
					}
				}
			}
			w := make([]float32, n)
			if err := Dequantize(typ, row, w); err != nil {
				t.Fatal(err)
			}
			var ref, mag float64
			for i := range w {
				ref += float64(w[i]) * float64(xs[i])
				mag += math.Abs(float64(w[i]) * float64(xs[i]))
			}
			got := float64(Dot(typ, row, &v))
			if math.Abs(got-ref) > 1e-5*mag+1e-6 {
				t.Fatalf("%s trial %d: Dot = %g, reference %g (magnitude %g)", typ, trial, got, ref, mag)
			}
			if typ == gguf.Q8_0 || typ == gguf.Q4_0 {
				var g float32
				if typ == gguf.Q8_0 {
					g = dotQ8_0Generic(row, v.Q8)
				} else {
					g = dotQ4_0Generic(row, v.Q8)
				}
				if math.Abs(float64(g)-ref) > 1e-5*mag+1e-6 {
					t.Fatalf("%s generic = %g, reference %g", typ, g, ref)
				}
			}
		}
	}
}

func TestMatMulMatchesMatVec(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rows, cols := 43, 256 // packed kernels: two groups of 16 rows, one of 8 and three rows more
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.F16} {
		nb, _ := typ.RowBytes(int64(rows * cols))
		data := make([]byte, nb)
		Quantize(typ, randVec(r, rows*cols), data)
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]Vec, 5)
		ys := make([][]float32, 5)
		for i := range xs {
			xs[i].Load(typ, randVec(r, cols))
			ys[i] = make([]float32, rows)
		}
		MatMul(&Pool{Threads: 3}, m, xs, ys)
		for i := range xs {
			y := make([]float32, rows)
			MatVec(&Pool{Threads: 2}, m, &xs[i], y)
			for j := range y {
				// The two-vector kernels add exact block totals, the row kernels add lanes
				// in two accumulators: equal up to float rounding (absolute where the terms,
				// of order 1-10 here, cancel).
				if math.Abs(float64(y[j]-ys[i][j])) > 1e-5*math.Abs(float64(y[j]))+1e-5 {
					t.Fatalf("%s: MatMul[%d][%d] = %v, MatVec %v", typ, i, j, ys[i][j], y[j])
				}
				// Q4_0 sums block totals in order in both: prefill and decode agree exactly.
				if typ == gguf.Q4_0 && y[j] != ys[i][j] {
					t.Fatalf("%s: MatMul[%d][%d] = %v, MatVec %v: not bit for bit", typ, i, j, ys[i][j], y[j])
				}
			}
		}
	}
	if _, err := NewMatrix(gguf.Q8_0, 2, 32, make([]byte, 67)); err == nil {
		t.Error("short matrix data accepted")
	}
	if _, err := NewMatrix(gguf.IQ2_XXS, 1, 256, make([]byte, 66)); err == nil {
		t.Error("unsupported type accepted")
	}
}

// The kernels in use (assembly where the CPU has it) against the pure-Go ones, over lengths
// that exercise the unrolled loops and their tails, and extreme quants (-128 weights, ±127
// activations) that would saturate a careless int16 path.
func TestKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	t.Logf("kernel: %s", Kernel())
	for _, nb := range []int{1, 2, 3, 5, 8, 33} {
		n := nb * 32
		for trial := 0; trial < 5; trial++ {
			w8 := randBlocks(r, gguf.Q8_0, n)
			w4 := randBlocks(r, gguf.Q4_0, n)
			var x Vec
			x.Load(gguf.Q8_0, randVec(r, n))
			if trial == 0 {
				for b := 0; b < nb; b++ {
					for j := 0; j < 32; j++ {
						w8[b*34+2+j] = 0x80 // -128
						x.Q8[b*34+2+j] = byte(int8([]int{127, -127}[j&1]))
					}
				}
				x.resum()
			}
			check := func(name string, got, want float32) {
				if math.Abs(float64(got-want)) > 1e-5*math.Abs(float64(want))+1e-5 {
					t.Fatalf("%s nb=%d trial %d: kernel %v, generic %v", name, nb, trial, got, want)
				}
			}
			check("Q8_0", dotQ8_0(w8, x.Q8), dotQ8_0Generic(w8, x.Q8))
			check("Q4_0", dotQ4_0(w4, x.Q8), dotQ4_0Generic(w4, x.Q8))
			check("Q4_0 totals", dotQ4_0Vec(w4, &x), dotQ4_0Generic(w4, x.Q8))
		}
	}
	// Two-vector kernels (MatMul) against the generic dot, odd batch and 4k+3 rows, with
	// and without VNNI where the CPU has it.
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q8_0 | 1<<16, gguf.Q4_0 | 1<<16} {
		restore := setVNNI(typ&(1<<16) == 0)
		typ &^= 1 << 16
		for _, nb := range []int{1, 3, 8} {
			rows, cols := 19, nb*32
			m, _ := NewMatrix(typ, rows, cols, randBlocks(r, typ, rows*cols))
			xs := make([]Vec, 5)
			ys := make([][]float32, 5)
			for i := range xs {
				xs[i].Load(typ, randVec(r, cols))
				ys[i] = make([]float32, rows)
			}
			MatMul(nil, m, xs, ys)
			for v := range xs {
				for i := 0; i < rows; i++ {
					var want float32
					if typ == gguf.Q8_0 {
						want = dotQ8_0Generic(m.Row(i), xs[v].Q8)
					} else {
						want = dotQ4_0Generic(m.Row(i), xs[v].Q8)
					}
					if math.Abs(float64(ys[v][i]-want)) > 1e-5*math.Abs(float64(want))+1e-5 {
						t.Fatalf("%s nb=%d vector %d row %d: MatMul %v, generic %v (kernel %s)", typ, nb, v, i, ys[v][i], want, Kernel())
					}
				}
			}
		}
		restore()
	}
	// Row kernels (MatVec) against the generic dot per row, with and without VNNI.
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q8_0 | 1<<16, gguf.Q4_0 | 1<<16} {
		restore := setVNNI(typ&(1<<16) == 0)
		typ &^= 1 << 16
		for _, nb := range []int{1, 2, 3, 5, 7, 8} { // the Q4_0 kernel: 4 blocks, 2, then 1
			rows, cols := 11, nb*32
			data := randBlocks(r, typ, rows*cols)
			m, _ := NewMatrix(typ, rows, cols, data)
			var x Vec
			x.Load(typ, randVec(r, cols))
			if nb == 2 { // extremes: -128 weights, ±127 activations
				for b := 0; b < nb; b++ {
					for j := 0; j < 32; j++ {
						x.Q8[b*34+2+j] = byte(int8([]int{127, -127}[j&1]))
						if typ == gguf.Q8_0 {
							data[b*34+2+j] = 0x80
						}
					}
				}
				x.resum()
			}
			y := make([]float32, rows)
			MatVec(nil, m, &x, y)
			for i := 0; i < rows; i++ {
				var want float32
				if typ == gguf.Q8_0 {
					want = dotQ8_0Generic(m.Row(i), x.Q8)
				} else {
					want = dotQ4_0Generic(m.Row(i), x.Q8)
				}
				if math.Abs(float64(y[i]-want)) > 1e-5*math.Abs(float64(want))+1e-5 {
					t.Fatalf("%s nb=%d row %d: MatVec %v, generic %v (kernel %s)", typ, nb, i, y[i], want, Kernel())
				}
				// NEON sums Q4_0's block totals with fused multiply-adds in order, as the
				// pure-Go kernels compiled for arm64 do; its Q8_0 kernel and amd64's take
				// llama.cpp's eight lanes (dotQ8_0Lanes).
				if strings.HasPrefix(Kernel(), "neon") && typ == gguf.Q4_0 && y[i] != want {
					t.Fatalf("%s nb=%d row %d: NEON %v, generic %v: not bit for bit", typ, nb, i, y[i], want)
				}
				if Kernel() != "go" && typ == gguf.Q8_0 && y[i] != dotQ8_0Lanes(m.Row(i), x.Q8) {
					t.Fatalf("%s nb=%d row %d: MatVec %v, eight-lane twin %v: not bit for bit (kernel %s)", typ, nb, i, y[i], dotQ8_0Lanes(m.Row(i), x.Q8), Kernel())
				}
				// Bit for bit the one-row kernels, whose float order is llama.cpp's.
				if one := Dot(typ, m.Row(i), &x); y[i] != one {
					t.Fatalf("%s nb=%d row %d: MatVec %v, Dot %v (kernel %s)", typ, nb, i, y[i], one, Kernel())
				}
			}
		}
		restore()
	}
	for _, n := range []int{1, 15, 16, 31, 32, 33, 100, 1000} {
		x := randVec(r, n)
		wf := make([]byte, 4*n)
		Quantize(gguf.F32, randVec(r, n), wf)
		var got, want float64 = float64(dotF32(wf, x)), float64(dotF32Generic(wf, x))
		if math.Abs(got-want) > 1e-5*float64(n) {
			t.Fatalf("F32 n=%d: kernel %v, generic %v", n, got, want)
		}
		wh := make([]byte, 2*n)
		Quantize(gguf.F16, randVec(r, n), wh)
		var v Vec
		v.Load(gguf.F16, x)
		got, want = float64(dotF16(wh, v.U16)), float64(dotF16Generic(wh, v.U16))
		if math.Abs(got-want) > 1e-4*float64(n) {
			t.Fatalf("F16 n=%d: kernel %v, generic %v", n, got, want)
		}
	}
}

// The row kernels for Q8_0 activations (Q8_0, Q4_0, IQ4_NL weights; on arm64 with the SDOT
// and the baseline NEON path) against the Go twins: bit for bit where the kernel keeps the
// twins' float order (NEON; IQ4_NL's AVX2 kernel; Q8_0's, whose twin is dotQ8_0Lanes), else
// within rounding.
// Extremes: activations at -127 (the Q8_0 quantizer writes no -128) against the largest
// weights of either sign.
func TestQ8_0RowKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	q8 := dotQ8_0Generic
	if Kernel() != "go" {
		q8 = dotQ8_0Lanes // the Q8_0 kernels of amd64 and arm64 (llama.cpp's order)
	}
	twin := map[gguf.Type]func(w, x []byte) float32{
		gguf.Q8_0: q8, gguf.Q4_0: dotQ4_0Generic,
		gguf.IQ4_NL: func(w, x []byte) float32 {
			var v Vec
			v.Q8 = x
			v.resum()
			return dotIQ4_NL(w, &v)
		},
	}
	for _, dp := range dotprodPaths() {
		restore := setDotprod(dp)
		for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL} {
			exact := strings.HasPrefix(Kernel(), "neon") || typ == gguf.IQ4_NL || typ == gguf.Q8_0
			for _, nb := range []int{1, 2, 3, 8, 13} {
				for trial := 0; trial < 4; trial++ {
					rows, cols := 7, nb*QK8_0
					data := randBlocks(r, typ, rows*cols)
					bs := typ.TypeSize()
					var x Vec
					x.Load(typ, randVec(r, cols))
					if trial < 2 { // all weights at the extreme of one sign, activations at -127
						for b := 0; b < rows*nb; b++ {
							for j := 2; j < bs; j++ {
								data[b*bs+j] = []byte{0x80, 0x00}[trial]
								if typ == gguf.Q8_0 && trial == 1 {
									data[b*bs+j] = 0x7f
								}
							}
						}
						for b := 0; b < nb; b++ {
							for j := 2; j < BlockQ8_0; j++ {
								x.Q8[b*BlockQ8_0+j] = 0x81
							}
						}
						x.resum()
					}
					m, err := NewMatrix(typ, rows, cols, data)
					if err != nil {
						t.Fatal(err)
					}
					y := make([]float32, rows)
					MatVec(nil, m, &x, y)
					for i := 0; i < rows; i++ {
						want, one := twin[typ](m.Row(i), x.Q8), Dot(typ, m.Row(i), &x)
						ok := y[i] == want && one == want
						if !exact {
							tol := 1e-5*math.Abs(float64(want)) + 1e-5
							ok = math.Abs(float64(y[i]-want)) <= tol && math.Abs(float64(one-want)) <= tol
						}
						if !ok {
							t.Fatalf("%s nb=%d trial %d row %d (kernel %s): MatVec %v, Dot %v, Go %v", typ, nb, trial, i, Kernel(), y[i], one, want)
						}
					}
				}
			}
		}
		restore()
	}
}

func TestHalfVectorKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 8, 16, 17, 64, 128, 130} {
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i], b[i] = F32ToF16(float32(r.NormFloat64())), F32ToF16(float32(r.NormFloat64()))
		}
		var ref float64
		for i := range a {
			ref += float64(F16ToF32(a[i])) * float64(F16ToF32(b[i]))
		}
		if got := DotF16(a, b); math.Abs(float64(got)-ref) > 1e-4*float64(n) {
			t.Fatalf("DotF16 n=%d: %v, want %v", n, got, ref)
		}
		out := randVec(r, n)
		want := make([]float64, n)
		for i := range want {
			want[i] = float64(out[i]) + 0.75*float64(F16ToF32(b[i]))
		}
		AxpyF16(out, 0.75, b)
		for i := range want {
			if math.Abs(float64(out[i])-want[i]) > 1e-5 {
				t.Fatalf("AxpyF16 n=%d [%d]: %v, want %v", n, i, out[i], want[i])
			}
		}
	}
}

func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 4096
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		var row []byte
		switch typ {
		case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
			row = randBlocks(r, typ, n)
		default:
			nb, _ := typ.RowBytes(n)
			row = make([]byte, nb)
			Quantize(typ, randVec(r, n), row)
		}
		var v Vec
		v.Load(typ, randVec(r, n))
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(row)))
			for i := 0; i < b.N; i++ {
				Dot(typ, row, &v)
			}
		})
	}
}

func BenchmarkMatVec(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 512, 2048
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0} {
		nb, _ := typ.RowBytes(rows * cols)
		data := make([]byte, nb)
		Quantize(typ, randVec(r, rows*cols), data)
		m, _ := NewMatrix(typ, rows, cols, data)
		var v Vec
		v.Load(typ, randVec(r, cols))
		y := make([]float32, rows)
		const batch = 16
		xs := make([]Vec, batch)
		ys := make([][]float32, batch)
		for i := range xs {
			xs[i].Load(typ, randVec(r, cols))
			ys[i] = make([]float32, rows)
		}
		b.Run(typ.String()+"/matmul16", func(b *testing.B) {
			b.SetBytes(int64(len(data)) * batch)
			for i := 0; i < b.N; i++ {
				MatMul(nil, m, xs, ys)
			}
		})
		b.Run(typ.String()+"/x4", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				MatVec(nil, m, &v, y)
			}
		})
		b.Run(typ.String()+"/x1", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				for j := 0; j < rows; j++ {
					y[j] = Dot(typ, m.Row(j), &v)
				}
			}
		})
	}
}

// The activation conversions in use (assembly where the CPU has it) produce the bytes of the
// pure-Go ones: blocks of zeros, tiny and huge values, ties of the rounding, NaN-free specials.
func TestConversionsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 7, 8, 9, 32, 64, 96, 1024, 1040} {
		x := randVec(r, n)
		for i := range x {
			switch r.IntN(8) {
			case 0:
				x[i] = 0
			case 1:
				x[i] *= 1e-6 // F16 subnormals
			case 2:
				x[i] *= 7e4 // beyond F16's range
			case 3:
				x[i] = float32(r.IntN(64)-32) + 0.5 // exact ties
			}
		}
		if n >= 64 {
			clear(x[32:64]) // an all-zero Q8_0 block
		}
		got, want := make([]uint16, n), make([]uint16, n)
		F32ToF16s(got, x)
		f32ToF16sGeneric(want, x)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("F32ToF16s n=%d [%d] of %g: %#04x, generic %#04x", n, i, x[i], got[i], want[i])
			}
		}
		rounded := append([]float32(nil), x...)
		ScaleRoundF16s(rounded, 1)
		for i := range rounded {
			if rounded[i] != F16ToF32(want[i]) {
				t.Fatalf("ScaleRoundF16s n=%d [%d] of %g: %g, want %g", n, i, x[i], rounded[i], F16ToF32(want[i]))
			}
		}
		copy(rounded, x)
		ScaleRoundF16s(rounded, 0.37)
		for i := range rounded {
			if w := F16ToF32(F32ToF16(0.37 * x[i])); rounded[i] != w {
				t.Fatalf("ScaleRoundF16s(0.37) n=%d [%d] of %g: %g, want %g", n, i, x[i], rounded[i], w)
			}
		}
		if n%QK8_0 == 0 {
			nb := n / QK8_0
			gq, wq := make([]byte, nb*BlockQ8_0), make([]byte, nb*BlockQ8_0)
			quantizeQ8_0(x, gq)
			quantizeQ8_0Generic(x, wq)
			if !bytes.Equal(gq, wq) {
				t.Fatalf("quantizeQ8_0 n=%d (kernel %s): differs from the generic one", n, Kernel())
			}
		}
	}
}

// The all-positions attention kernels equal DotF16 and AxpyF16 called per position, bit for
// bit (the model's greedy tokens depend on it), for head sizes with and without a fast path.
func TestHalfRowsMatchPerRow(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, hd := range []int{8, 16, 32, 48, 64, 128} {
		for _, n := range []int{0, 1, 5, 33} {
			stride, off := 3*hd+16, hd+8
			cache := make([]uint16, max(n, 1)*stride)
			for i := range cache {
				cache[i] = F32ToF16(float32(r.NormFloat64()))
			}
			q := make([]uint16, hd)
			for i := range q {
				q[i] = F32ToF16(float32(r.NormFloat64()))
			}
			got := make([]float32, n)
			const scale = 0.125
			mx := DotF16Rows(got, q, cache, stride, off, scale)
			wantMax := float32(math.Inf(-1))
			w := randVec(r, n)
			acc, want := randVec(r, hd), make([]float32, hd)
			copy(want, acc)
			AxpyF16Rows(acc, w, cache, stride, off)
			for p := 0; p < n; p++ {
				d := DotF16(q, cache[p*stride+off:p*stride+off+hd]) * scale
				if got[p] != d {
					t.Fatalf("hd=%d n=%d: DotF16Rows[%d] = %v, DotF16 %v", hd, n, p, got[p], d)
				}
				wantMax = max(wantMax, d)
				AxpyF16(want, w[p], cache[p*stride+off:p*stride+off+hd])
			}
			if mx != wantMax {
				t.Fatalf("hd=%d n=%d: DotF16Rows max %v, want %v", hd, n, mx, wantMax)
			}
			for j := range acc {
				if acc[j] != want[j] {
					t.Fatalf("hd=%d n=%d: AxpyF16Rows[%d] = %v, AxpyF16 per row %v", hd, n, j, acc[j], want[j])
				}
			}
		}
	}
}
