package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// The legacy row kernels (Q5_0 weights x Q8_0, Q5_1 and Q4_1 x Q8_1; on arm64 with the SDOT
// and the baseline NEON path) through MatVec and MatMul against the Go dot functions: bit for
// bit on every path (NEON, AVX2, AVX-512 VNNI, pure Go). Rows of random bytes with f16 scales (and mins) of either sign and any finite
// magnitude; extremes: every quant at the top level (all bits set) or zero, against
// activations all -128 or all 127.
func TestLegacyRowKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	twin := map[gguf.Type]func(row []byte, v *Vec) float32{gguf.Q4_1: dotQ4_1, gguf.Q5_0: dotQ5_0, gguf.Q5_1: dotQ5_1}
	randF16 := func() uint16 {
		for {
			if h := uint16(r.IntN(1 << 16)); h&0x7c00 != 0x7c00 {
				return h
			}
		}
	}
	for _, dp := range dotprodPaths() {
		restore := setDotprod(dp)
		for _, typ := range []gguf.Type{gguf.Q4_1, gguf.Q5_0, gguf.Q5_1} {
			bs := typ.TypeSize()
			scales := 4 // bytes of f16 d (and m) before the quants
			if typ == gguf.Q5_0 {
				scales = 2
			}
			for _, nb := range []int{1, 2, 3, 8, 13} {
				for trial := 0; trial < 6; trial++ {
					rows, cols := 7, nb*QK8_0
					data := make([]byte, rows*nb*bs)
					for i := range data {
						data[i] = byte(r.IntN(256))
					}
					var x Vec
					if err := x.Load(typ, randVec(r, cols)); err != nil {
						t.Fatal(err)
					}
					for b := 0; b < rows*nb; b++ {
						blk := data[b*bs : (b+1)*bs]
						for o := 0; o < scales; o += 2 {
							h := randF16()
							if trial >= 4 { // small scales, as real files have
								h = F32ToF16(float32((r.Float64() - 0.5) * 0.02))
							}
							binary.LittleEndian.PutUint16(blk[o:], h)
						}
						if trial < 2 {
							for j := scales; j < bs; j++ {
								blk[j] = []byte{0xff, 0x00}[trial]
							}
						}
					}
					if trial < 4 { // activations at one extreme: -128 (which the quantizer never writes) or 127
						for b := 0; b < nb; b++ {
							for j := 2; j < BlockQ8_0; j++ {
								x.Q8[b*BlockQ8_0+j] = []byte{0x80, 0x7f}[trial%2]
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
					ys := [][]float32{make([]float32, rows), make([]float32, rows), make([]float32, rows)}
					MatMul(nil, m, []Vec{x, x, x}, ys)
					for i := 0; i < rows; i++ {
						want := twin[typ](m.Row(i), &x)
						for k, got := range []float32{y[i], ys[0][i], ys[1][i], ys[2][i]} {
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s (dotprod %v, kernel %s) nb=%d trial %d row %d result %d (0 MatVec, else MatMul): %v (%#x), Go %v (%#x)",
									typ, dp, Kernel(), nb, trial, i, k, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
		restore()
	}
}
