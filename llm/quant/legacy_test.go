package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// legacyTwin is the Go dot product each legacy-type row kernel must match bit for bit.
var legacyTwin = map[gguf.Type]func(row []byte, v *Vec) float32{
	gguf.Q4_1: dotQ4_1, gguf.Q5_0: dotQ5_0, gguf.Q5_1: dotQ5_1,
}

var legacyTypes = []gguf.Type{gguf.Q4_1, gguf.Q5_0, gguf.Q5_1}

// sameFloat reports whether a and b are the same float32, bit for bit (any two NaNs count as
// the same: the kernels and the Go code may propagate different NaN payloads, and FCVTL
// quiets a signalling NaN half where a table lookup does not).
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// legacyCase is one kind of weights and activations TestLegacyKernelsMatchGo tries: fill gives
// the weight bytes (scales overwritten by scale), q the activation quants, xd the F16 scale of
// each activation block and s Q8_1's sum field.
type legacyCase struct {
	name  string
	fill  func(i int) byte
	scale func() uint16
	q     func(i int) int8
	xd    func() uint16
	s     func() float32
}

// legacyVec builds a vector of nb Q8_0 blocks for weights of type t from the case's quants and
// scales, with consistent D and Q8Sum8 (resum) and, for Q8_1, the S given.
func legacyVec(t gguf.Type, nb int, tc legacyCase) *Vec {
	v := &Vec{Type: VecType(t), N: nb * QK8_0, Q8: make([]byte, nb*BlockQ8_0)}
	for b := 0; b < nb; b++ {
		binary.LittleEndian.PutUint16(v.Q8[b*BlockQ8_0:], tc.xd())
		for j := 0; j < QK8_0; j++ {
			v.Q8[b*BlockQ8_0+2+j] = byte(tc.q(b*QK8_0 + j))
		}
	}
	v.resum()
	if v.Type == gguf.Q8_1 {
		v.S = make([]float32, nb)
		for b := range v.S {
			v.S[b] = tc.s()
		}
	}
	return v
}

// The AVX2 row kernels of Q4_1, Q5_0 and Q5_1 (through MatVec, MatMul and the row hook on
// sub-ranges) against dotQ4_1, dotQ5_0 and dotQ5_1, bit for bit: random blocks with scales
// and minima of both signs and every finite F16 magnitude, all-zero blocks, every quant at
// its largest (qh all ones) against activations at -128 and 127, alternating patterns; odd
// row counts; batches of one to thirteen vectors (the eight-, four-, two- and one-vector
// paths).
func TestLegacyKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	randF16 := func() uint16 {
		for {
			if h := uint16(r.IntN(1 << 16)); h&0x7c00 != 0x7c00 { // finite
				return h
			}
		}
	}
	fixed := func(h uint16) func() uint16 { return func() uint16 { return h } }
	rnd := func(int) byte { return byte(r.IntN(256)) }
	rq := func(int) int8 { return int8(r.IntN(256) - 128) }
	rs := func() float32 { return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))) }
	cases := []legacyCase{
		{"random", rnd, randF16, rq, randF16, rs},
		{"random-small", rnd, func() uint16 { return F32ToF16(float32(r.Float64()*0.02 - 0.01)) }, rq,
			func() uint16 { return F32ToF16(float32(r.Float64() * 0.02)) }, rs},
		{"zero", func(int) byte { return 0 }, fixed(0), func(int) int8 { return 0 }, fixed(0), func() float32 { return 0 }},
		{"max-neg-x", func(int) byte { return 0xff }, fixed(0x7bff), func(int) int8 { return -128 }, fixed(0x1c00), func() float32 { return -3.5 }},
		{"max-pos-x", func(int) byte { return 0xff }, fixed(0x3c00), func(int) int8 { return 127 }, fixed(0x3c00), func() float32 { return 1e4 }},
		{"alternating", func(i int) byte { return byte(0xa5 ^ -(i & 1)) }, fixed(0xb555), func(i int) int8 { return int8(127 - 255*(i&1)) },
			fixed(0x2e66), func() float32 { return -0.25 }},
	}
	// The AVX-512 forms where the CPU has them (vnni=true), then the AVX2 forms.
	for _, vnni := range []bool{true, false} {
		restore := setVNNI(vnni)
		for _, typ := range legacyTypes {
			twin := legacyTwin[typ]
			bs := typ.TypeSize()
			f := lookup(typ)
			for _, tc := range cases {
				for _, nb := range []int{1, 2, 3, 4, 7, 8, 12, 13, 16, 28} {
					const rows = 7
					data := make([]byte, rows*nb*bs)
					for i := range data {
						data[i] = tc.fill(i)
					}
					for off := 0; off < len(data); off += bs {
						binary.LittleEndian.PutUint16(data[off:], tc.scale())
						if typ != gguf.Q5_0 { // the minimum m
							binary.LittleEndian.PutUint16(data[off+2:], tc.scale())
						}
					}
					m, err := NewMatrix(typ, rows, nb*QK8_0, data)
					if err != nil {
						t.Fatal(err)
					}
					xs := make([]Vec, 13) // eight, four and one: every MatMul path
					for k := range xs {
						xs[k] = *legacyVec(typ, nb, tc)
					}
					want := make([][]float32, len(xs))
					for k := range xs {
						want[k] = make([]float32, rows)
						for i := range want[k] {
							want[k][i] = twin(m.Row(i), &xs[k])
						}
					}
					check := func(what string, k, i int, got float32) {
						t.Helper()
						if !sameFloat(got, want[k][i]) {
							t.Fatalf("%s %s nb=%d %s vector %d row %d (kernel %s, vnni %v): %v (%#x), Go %v (%#x)", typ, tc.name, nb, what, k, i,
								Kernel(), vnni, got, math.Float32bits(got), want[k][i], math.Float32bits(want[k][i]))
						}
					}
					y := make([]float32, rows)
					MatVec(nil, m, &xs[0], y)
					for i := range y {
						check("MatVec", 0, i, y[i])
						check("Dot", 0, i, Dot(typ, m.Row(i), &xs[0]))
					}
					// The row hook on sub-ranges: rows outside [lo,hi) stay untouched.
					for _, rg := range [][2]int{{0, rows}, {1, 6}, {3, 4}, {6, 7}} {
						const sentinel = -7.25
						for i := range y {
							y[i] = sentinel
						}
						if !f.rows(m, &xs[1], y, rg[0], rg[1]) {
							if strings.HasPrefix(Kernel(), "avx2") {
								t.Fatalf("%s: the row kernel declined rows %v on %s", typ, rg, Kernel())
							}
							continue
						}
						for i := range y {
							if i < rg[0] || i >= rg[1] {
								if y[i] != sentinel {
									t.Fatalf("%s %s nb=%d rows %v: row %d written (%v)", typ, tc.name, nb, rg, i, y[i])
								}
								continue
							}
							check("rows", 1, i, y[i])
						}
					}
					for _, threads := range []int{1, 3} {
						for n := 1; n <= len(xs); n++ {
							ys := make([][]float32, n)
							for k := range ys {
								ys[k] = make([]float32, rows)
							}
							MatMul(&Pool{Threads: threads}, m, xs[:n], ys)
							for k := range ys {
								for i := range ys[k] {
									check("MatMul", k, i, ys[k][i])
								}
							}
						}
					}
				}
			}
		}
		restore()
	}
}

// Vectors loaded from floats (Load's Q8_0 and Q8_1 with S) against random quantized rows of
// a longer width, through MatVec and MatMul.
func TestLegacyKernelsLoadedVectors(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, typ := range legacyTypes {
		const rows, cols = 33, 896
		w := randVec(r, rows*cols)
		data := make([]byte, rows*typ.TypeSize()*cols/QK8_0)
		if err := Quantize(typ, w, data); err != nil {
			t.Fatal(err)
		}
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]Vec, 3)
		ys := make([][]float32, len(xs))
		for k := range xs {
			if err := xs[k].Load(typ, randVec(r, cols)); err != nil {
				t.Fatal(err)
			}
			ys[k] = make([]float32, rows)
		}
		MatMul(nil, m, xs, ys)
		y := make([]float32, rows)
		MatVec(&Pool{Threads: 2}, m, &xs[2], y)
		for i := 0; i < rows; i++ {
			for k := range xs {
				if want := legacyTwin[typ](m.Row(i), &xs[k]); !sameFloat(ys[k][i], want) {
					t.Fatalf("%s row %d vector %d: MatMul %v, Go %v", typ, i, k, ys[k][i], want)
				}
			}
			if want := legacyTwin[typ](m.Row(i), &xs[2]); !sameFloat(y[i], want) {
				t.Fatalf("%s row %d: MatVec %v, Go %v", typ, i, y[i], want)
			}
		}
	}
}

// BenchmarkLegacyMatVec: decode's products for the legacy types at Qwen2.5-0.5B's FFN shapes:
// the Go dot functions row by row (go), MatVec with the AVX2 kernels (avx2) and with the
// AVX-512 forms where the CPU has them (vnni; elsewhere the same as avx2).
func BenchmarkLegacyMatVec(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ rows, cols int }{{4864, 896}, {896, 4864}} {
		for _, typ := range legacyTypes {
			m, err := NewMatrix(typ, sh.rows, sh.cols, randBlocks(r, typ, sh.rows*sh.cols))
			if err != nil {
				b.Fatal(err)
			}
			var v Vec
			v.Load(typ, randVec(r, sh.cols))
			y := make([]float32, sh.rows)
			for _, mode := range []string{"go", "avx2", "vnni"} {
				asm := mode != "go"
				b.Run(fmt.Sprintf("%s/%dx%d/%s", typ, sh.rows, sh.cols, mode), func(b *testing.B) {
					restore := setVNNI(mode == "vnni")
					defer restore()
					b.SetBytes(int64(len(m.Data)))
					for i := 0; i < b.N; i++ {
						if asm {
							MatVec(nil, m, &v, y)
						} else {
							for j := 0; j < sh.rows; j++ {
								y[j] = legacyTwin[typ](m.Data[j*m.RowBytes:(j+1)*m.RowBytes], &v)
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkLegacyMatMul: prefill's product with a batch of 16 vectors at Qwen2.5-0.5B's FFN
// shapes: the one-vector AVX2 kernel per vector, the two-vector AVX2 kernel, its AVX-512 form
// and the four- and eight-vector AVX-512 kernels.
func BenchmarkLegacyMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ rows, cols int }{{4864, 896}, {896, 4864}} {
		for _, typ := range legacyTypes {
			m, err := NewMatrix(typ, sh.rows, sh.cols, randBlocks(r, typ, sh.rows*sh.cols))
			if err != nil {
				b.Fatal(err)
			}
			xs := make([]Vec, 16)
			ys := make([][]float32, len(xs))
			for i := range xs {
				xs[i].Load(typ, randVec(r, sh.cols))
				ys[i] = make([]float32, sh.rows)
			}
			for _, mode := range []string{"one-avx2", "two-avx2", "two-vnni", "four-vnni", "eight-vnni"} {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", typ, sh.rows, sh.cols, mode), func(b *testing.B) {
					restore := setLegacy2(mode != "one-avx2")
					defer restore()
					restore4 := setLegacy4(mode == "four-vnni" || mode == "eight-vnni")
					defer restore4()
					restore8 := setLegacy8(mode == "eight-vnni")
					defer restore8()
					restoreV := setVNNI(strings.HasSuffix(mode, "-vnni"))
					defer restoreV()
					b.SetBytes(int64(len(m.Data)))
					for i := 0; i < b.N; i++ {
						MatMul(nil, m, xs, ys)
					}
				})
			}
		}
	}
}
