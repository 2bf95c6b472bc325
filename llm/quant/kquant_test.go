package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// kTwin is the pure-Go dot product each K-quant kernel must match bit for bit.
var kTwin = map[gguf.Type]func(row []byte, v *Vec) float32{
	gguf.Q2_K: dotQ2_K, gguf.Q3_K: dotQ3_K, gguf.Q4_K: dotQ4_K, gguf.Q5_K: dotQ5_K, gguf.Q6_K: dotQ6_K, gguf.IQ4_XS: dotIQ4_XS,
}

// kVec makes a Q8_K vector of nb blocks with quants from q (any int8, -128 included, which
// the quantizer never writes) and consistent Bsums.
func kVec(nb int, d float32, q func(i int) int8) *Vec {
	v := &Vec{Type: gguf.Q8_K, N: nb * QK_K, K: make([]BlockQ8K, nb)}
	for b := range v.K {
		v.K[b].D = d
		for i := range v.K[b].Qs {
			v.K[b].Qs[i] = q(b*QK_K + i)
		}
		for j := range v.K[b].Bsums {
			var s int16
			for _, x := range v.K[b].Qs[16*j : 16*j+16] {
				s += int16(x)
			}
			v.K[b].Bsums[j] = s
		}
	}
	return v
}

// kRow fills nb blocks of t with bytes from fill and the F16 scales d (and dmin) given.
func kRow(t gguf.Type, nb int, fill func(i int) byte, d, dmin uint16) []byte {
	bs := t.TypeSize()
	row := make([]byte, nb*bs)
	for i := range row {
		row[i] = fill(i)
	}
	for off := 0; off < len(row); off += bs {
		putKScales(t, row[off:off+bs], d, dmin)
	}
	return row
}

// putKScales writes a block's F16 scale d (and dmin where t has one) at t's offsets.
func putKScales(t gguf.Type, blk []byte, d, dmin uint16) {
	switch t {
	case gguf.Q6_K:
		binary.LittleEndian.PutUint16(blk[208:], d)
	case gguf.Q3_K:
		binary.LittleEndian.PutUint16(blk[108:], d)
	case gguf.Q2_K:
		binary.LittleEndian.PutUint16(blk[80:], d)
		binary.LittleEndian.PutUint16(blk[82:], dmin)
	default:
		binary.LittleEndian.PutUint16(blk, d)
		binary.LittleEndian.PutUint16(blk[2:], dmin)
	}
}

// The assembly K-quant and IQ4_XS kernels (Dot and MatVec) against their Go twins, bit for
// bit: random blocks and scales of both signs and all magnitudes, all-zero, all-max levels and
// scales, activations at -128 and 127; on arm64 both the SDOT and the baseline NEON path.
// kCase is one kind of row and vector TestKQuantKernelsMatchGo tries.
type kCase struct {
	name    string
	nb      int
	fill    func(i int) byte
	d, dmin func() uint16
	vd      float32
	q       func(i int) int8
}

func TestKQuantKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	randF16 := func() uint16 {
		for {
			h := uint16(r.IntN(1 << 16))
			if h&0x7c00 != 0x7c00 { // finite
				return h
			}
		}
	}
	rnd := func(i int) byte { return byte(r.IntN(256)) }
	rq := func(i int) int8 { return int8(r.IntN(256) - 128) }
	fixed := func(h uint16) func() uint16 { return func() uint16 { return h } }
	cases := []kCase{
		{"random", 4, rnd, randF16, randF16, 0.37, rq},
		{"random-small-scales", 3, rnd, func() uint16 { return F32ToF16(float32(r.Float64() * 0.01)) }, func() uint16 { return F32ToF16(float32(r.Float64() * 0.01)) }, 1.0 / 127, rq},
		{"zero", 2, func(int) byte { return 0 }, fixed(0), fixed(0), 0, func(int) int8 { return 0 }},
		{"max-levels-neg-x", 2, func(int) byte { return 0xff }, fixed(0x7bff), fixed(0x7bff), 3e-3, func(int) int8 { return -128 }},
		{"max-levels-pos-x", 1, func(int) byte { return 0xff }, fixed(0x3c00), fixed(0x3c00), 1, func(int) int8 { return 127 }},
		{"alternating", 8, func(i int) byte { return byte(0xf0 ^ -(i & 1)) }, fixed(0x3555), fixed(0xb555), -0.5, func(i int) int8 { return int8(127 - 255*(i&1)) }},
		{"random-one-block", 1, rnd, randF16, randF16, 2.5, rq},
	}
	for _, dp := range dotprodPaths() {
		restore := setDotprod(dp)
		defer restore()
		for _, typ := range []gguf.Type{gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS} {
			kernelCases(t, typ, dp, cases)
		}
	}
	// The AVX2 forms where the VNNI ones would run (amd64; elsewhere this repeats the above).
	restore := setVNNI(false)
	defer restore()
	for _, typ := range []gguf.Type{gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS} {
		kernelCases(t, typ, false, cases)
	}
}

func kernelCases(t *testing.T, typ gguf.Type, dp bool, cases []kCase) {
	twin := kTwin[typ]
	for _, tc := range cases {
		for trial := 0; trial < 8; trial++ {
			const rows = 5
			bs := typ.TypeSize()
			data := make([]byte, 0, rows*tc.nb*bs)
			for range rows {
				data = append(data, kRow(typ, tc.nb, tc.fill, 0, 0)...)
			}
			for off := 0; off < len(data); off += bs { // per-block scales
				putKScales(typ, data[off:off+bs], tc.d(), tc.dmin())
			}
			v := kVec(tc.nb, tc.vd, tc.q)
			m, err := NewMatrix(typ, rows, tc.nb*QK_K, data)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, rows)
			MatVec(nil, m, v, y)
			// The batch kernels (two vectors per pass where they exist), on the same extremes.
			ys := [][]float32{make([]float32, rows), make([]float32, rows), make([]float32, rows)}
			MatMul(nil, m, []Vec{*v, *v, *v}, ys)
			for i := 0; i < rows; i++ {
				want := twin(m.Row(i), v)
				got := Dot(typ, m.Row(i), v)
				if math.Float32bits(got) != math.Float32bits(want) || math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("%s %s (dotprod %v) trial %d row %d: Dot %v (%#x), MatVec %v (%#x), Go %v (%#x)", typ, tc.name, dp, trial, i,
						got, math.Float32bits(got), y[i], math.Float32bits(y[i]), want, math.Float32bits(want))
				}
				for b := range ys {
					if math.Float32bits(ys[b][i]) != math.Float32bits(want) {
						t.Fatalf("%s %s (dotprod %v) trial %d row %d vector %d: MatMul %v, Go %v", typ, tc.name, dp, trial, i, b, ys[b][i], want)
					}
				}
			}
		}
	}
}

// MatMul (prefill) on random rows and distinct vectors, batches of 1..5, one and three threads,
// against the Go twins bit for bit.
func TestKQuantMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []gguf.Type{gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS} {
		twin := kTwin[typ]
		for _, nb := range []int{1, 3, 8} {
			rows, cols := 37, nb*QK_K
			m, err := NewMatrix(typ, rows, cols, randBlocks(r, typ, rows*cols))
			if err != nil {
				t.Fatal(err)
			}
			xs := make([]Vec, 5)
			ys := make([][]float32, len(xs))
			for i := range xs {
				if err := xs[i].Load(typ, randVec(r, cols)); err != nil {
					t.Fatal(err)
				}
				ys[i] = make([]float32, rows)
			}
			for _, threads := range []int{1, 3} {
				for n := 1; n <= len(xs); n++ {
					MatMul(&Pool{Threads: threads}, m, xs[:n], ys[:n])
					for v := 0; v < n; v++ {
						for i := 0; i < rows; i++ {
							if want := twin(m.Row(i), &xs[v]); math.Float32bits(ys[v][i]) != math.Float32bits(want) {
								t.Fatalf("%s nb=%d batch %d vector %d row %d: MatMul %v, Go %v (kernel %s)", typ, nb, n, v, i, ys[v][i], want, Kernel())
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkKQuantMatMul: prefill's product of a matrix with a batch of 16 vectors.
func BenchmarkKQuantMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 1024, 2048
	for _, typ := range []gguf.Type{gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS} {
		m, err := NewMatrix(typ, rows, cols, randBlocks(r, typ, rows*cols))
		if err != nil {
			b.Fatal(err)
		}
		xs := make([]Vec, 16)
		ys := make([][]float32, len(xs))
		for i := range xs {
			xs[i].Load(typ, randVec(r, cols))
			ys[i] = make([]float32, rows)
		}
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(m.Data)))
			for i := 0; i < b.N; i++ {
				MatMul(nil, m, xs, ys)
			}
		})
	}
}

// BenchmarkKQuantMatVec: decode's matrix-vector product for the K-quants.
func BenchmarkKQuantMatVec(b *testing.B) {
	benchMatVec(b, rand.New(rand.NewPCG(1, 1)), 1024, 2048, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS)
}

// benchMatVec runs MatVec on a random rows x cols matrix of each type, one sub-benchmark each.
func benchMatVec(b *testing.B, r *rand.Rand, rows, cols int, types ...gguf.Type) {
	for _, typ := range types {
		m, err := NewMatrix(typ, rows, cols, randBlocks(r, typ, rows*cols))
		if err != nil {
			b.Fatal(err)
		}
		var v Vec
		v.Load(typ, randVec(r, cols))
		y := make([]float32, rows)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(m.Data)))
			for i := 0; i < b.N; i++ {
				MatVec(nil, m, &v, y)
			}
		})
	}
}

// BenchmarkQ5_KMatVec349M: decode's Q5_K products at the 349M shape's sizes (attention
// 1024x1024, FFN up 2816x1024, FFN down 1024x2816), with the AVX2 kernel (vnni=false) and
// the one this CPU selects (vnni=true; the same on CPUs without AVX-512 VNNI).
func BenchmarkQ5_KMatVec349M(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, sh := range []struct{ rows, cols int }{{1024, 1024}, {2816, 1024}, {1024, 2816}} {
		m, err := NewMatrix(gguf.Q5_K, sh.rows, sh.cols, randBlocks(r, gguf.Q5_K, sh.rows*sh.cols))
		if err != nil {
			b.Fatal(err)
		}
		var v Vec
		v.Load(gguf.Q5_K, randVec(r, sh.cols))
		y := make([]float32, sh.rows)
		for _, vnni := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%d/vnni=%v", sh.rows, sh.cols, vnni), func(b *testing.B) {
				restore := setVNNI(vnni)
				defer restore()
				b.SetBytes(int64(len(m.Data)))
				for i := 0; i < b.N; i++ {
					MatVec(nil, m, &v, y)
				}
			})
		}
	}
}

// quantizeQ8_K (assembly where there is some) against the Go twin, block by block and bit for
// bit: random blocks, ties of opposite sign (the first decides the sign of the scale), zero,
// subnormal and huge blocks, an infinity.
func TestQuantizeQ8_KMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const nb = 9
	x := make([]float32, nb*QK_K)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	blk := func(b int) []float32 { return x[b*QK_K : (b+1)*QK_K] }
	blk(1)[200], blk(1)[17] = 9, -9 // tie: the first (-9) wins
	blk(2)[3], blk(2)[255] = 7, -7
	clear(blk(3))
	for i := range blk(4) {
		blk(4)[i] = float32(r.NormFloat64()) * 1e-40 // subnormal
	}
	for i := range blk(5) {
		blk(5)[i] = float32(r.NormFloat64()) * 1e30
	}
	blk(6)[100] = float32(math.Inf(-1))
	blk(7)[0] = -0.0
	for i := range blk(8) {
		blk(8)[i] = float32(i%7) - 3 // many ties
	}
	got := make([]BlockQ8K, nb)
	for i := range got { // stale contents must be overwritten
		got[i].D, got[i].Qs[5], got[i].Bsums[3] = 1, 1, 1
	}
	quantizeQ8_K(x, got)
	for b := range got {
		var want BlockQ8K
		quantizeQ8_KBlock(blk(b), &want)
		if math.Float32bits(got[b].D) != math.Float32bits(want.D) || got[b].Qs != want.Qs || got[b].Bsums != want.Bsums {
			t.Fatalf("block %d: D %v Qs %v Bsums %v, Go: D %v Qs %v Bsums %v", b, got[b].D, got[b].Qs, got[b].Bsums, want.D, want.Qs, want.Bsums)
		}
	}
}

// KernelName: the instruction set agrees with the CPU detection (Kernel), the activation
// representation with VecType, and a type without kernels is an error listing the supported.
func TestKernelName(t *testing.T) {
	if _, err := KernelName(gguf.IQ2_XXS); err == nil || !strings.Contains(err.Error(), "IQ2_XXS") ||
		!strings.Contains(err.Error(), SupportedNames()) {
		t.Fatalf("IQ2_XXS: %v", err)
	}
	asm := map[string][]gguf.Type{
		"avx2":         {gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1},
		"avx2+vnni":    {gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1},
		"neon":         {gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS},
		"neon+dotprod": {gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS},
	}[Kernel()]
	isa := map[string]string{"avx2": "AVX2", "avx2+vnni": "AVX2", "neon": "NEON", "neon+dotprod": "NEON dotprod"}[Kernel()]
	for _, typ := range SupportedTypes() {
		name, err := KernelName(typ)
		if err != nil {
			t.Fatal(err)
		}
		want := "pure-Go"
		if slices.Contains(asm, typ) {
			want = isa
			if Kernel() == "avx2+vnni" && (typ == gguf.Q8_0 || typ == gguf.Q4_0 || typ == gguf.Q5_K) ||
				legacyISA512() && (typ == gguf.Q4_1 || typ == gguf.Q5_0 || typ == gguf.Q5_1) {
				want = "AVX-512 VNNI"
			}
		}
		if strings.HasPrefix(Kernel(), "neon") && (typ == gguf.F32 || typ == gguf.F16) {
			want = "NEON" // float_arm64.s: no SDOT in the float kernels
		}
		if want += " " + typ.String() + " x " + VecType(typ).String(); name != want {
			t.Errorf("%s: %q, want %q (kernel %s)", typ, name, want, Kernel())
		}
	}
}

// BenchmarkQ23_KMatVec: decode's Q2_K and Q3_K products at the 349M shape's FFN-down size
// (1024x2816).
func BenchmarkQ23_KMatVec(b *testing.B) {
	benchMatVec(b, rand.New(rand.NewPCG(4, 4)), 1024, 2816, gguf.Q2_K, gguf.Q3_K)
}
