package quant

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// fma32 is a*b+c rounded once to float32 (the FMLA/FMADDS/VFMADD result), computed without
// relying on the compiler: the float64 product of two float32s is exact; the float64 sum is
// made round-to-odd from its exact error (TwoSum), and a round-to-odd value with at least two
// more bits than float32 rounds to the same float32 as the exact sum does.
func fma32(a, b, c float32) float32 {
	p, z := float64(a)*float64(b), float64(c)
	s := p + z
	if math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(z, 0) || math.IsNaN(z) {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (z - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// dotQ8_0Lanes is the twin of the Q8_0 x Q8_0 kernels of amd64 and arm64, written from
// llama.cpp's AVX2 ggml_vec_dot_q8_0_q8_0: eight float lanes, lane k taking the exact sum of
// the block's products 4k..4k+3 times d_w*d_x in one fused multiply-add per block, then
// hsum_float_8 ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
func dotQ8_0Lanes(w, x []byte) float32 {
	var acc [8]float32
	nb := len(x) / BlockQ8_0
	for b := 0; b < nb; b++ {
		wb, xb := w[b*BlockQ8_0:(b+1)*BlockQ8_0], x[b*BlockQ8_0:(b+1)*BlockQ8_0]
		d := F16ToF32(binary.LittleEndian.Uint16(wb)) * F16ToF32(binary.LittleEndian.Uint16(xb))
		for k := range acc {
			var s int32
			for j := 2 + 4*k; j < 6+4*k; j++ {
				s += int32(int8(wb[j])) * int32(int8(xb[j]))
			}
			acc[k] = fma32(d, float32(s), acc[k])
		}
	}
	var r [4]float32
	for j := range r {
		r[j] = acc[j] + acc[4+j]
	}
	return (r[0] + r[2]) + (r[1] + r[3])
}

// sweepTwin is the Go function the kernels of this build are bit for bit with for rows of
// type t against v, and whether they are (else within rounding of it): the pure-Go dot product
// where the build has no kernel, dotQ8_0Lanes for the Q8_0 kernels of amd64 and arm64.
func sweepTwin(t gguf.Type) (func(row []byte, v *Vec) float32, bool) {
	asm := Kernel() != "go"
	neon := strings.HasPrefix(Kernel(), "neon")
	switch t {
	case gguf.Q8_0:
		if asm {
			return func(row []byte, v *Vec) float32 { return dotQ8_0Lanes(row, v.Q8) }, true
		}
		return func(row []byte, v *Vec) float32 { return dotQ8_0Generic(row, v.Q8) }, true
	case gguf.Q4_0:
		return func(row []byte, v *Vec) float32 { return dotQ4_0Generic(row, v.Q8) }, !asm || neon
	case gguf.IQ4_NL:
		return dotIQ4_NL, true
	case gguf.Q4_1:
		return dotQ4_1, true
	case gguf.Q5_0:
		return dotQ5_0, true
	case gguf.Q5_1:
		return dotQ5_1, true
	case gguf.Q2_K:
		return dotQ2_K, !asm || neon
	case gguf.Q3_K:
		return dotQ3_K, !asm || neon
	case gguf.Q4_K:
		return dotQ4_K, !asm || neon
	case gguf.Q5_K:
		return dotQ5_K, !asm || neon
	case gguf.Q6_K:
		return dotQ6_K, !asm || neon
	case gguf.IQ4_XS:
		return dotIQ4_XS, !asm || neon
	}
	return nil, false
}

// The row kernels at the shapes a sharded model gives them: every row count 1..17 and blocks
// per row 1..9 (super-blocks 1..3 for the K-quants), rows taken as a slice of a larger matrix
// (the data not starting at its row 0, as a rank's rows of a split tensor), through MatVec,
// Dot and MatMul with batches of 1..20 vectors, against the Go twins (sweepTwin): bit for bit
// where the kernel keeps the twin's float order. On arm64 both NEON paths (SDOT and
// baseline) run; qemu-aarch64 with QEMU_CPU=cortex-a57 has no SDOT, QEMU_CPU=max has.
func TestRowKernelsSweepShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	legacy := []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1}
	kq := []gguf.Type{gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS}
	for _, dp := range dotprodPaths() {
		restore := setDotprod(dp)
		for _, typ := range append(legacy, kq...) {
			twin, exact := sweepTwin(typ)
			// amd64's batched Q8_0 kernels sum block totals (repack.go), within rounding of Dot
			batchExact := typ != gguf.Q8_0 || Kernel() == "go" || strings.HasPrefix(Kernel(), "neon")
			bsz := typ.BlockSize()
			maxB := 9
			if bsz == QK_K {
				maxB = 3
			}
			for nb := 1; nb <= maxB; nb++ {
				cols := nb * bsz
				const total = 20 // rows of the whole matrix; the kernels see [r0, r0+rows)
				data := randBlocks(r, typ, total*cols)
				full, err := NewMatrix(typ, total, cols, data)
				if err != nil {
					t.Fatal(err)
				}
				xs := make([]Vec, 20)
				for i := range xs {
					if err := xs[i].Load(typ, randVec(r, cols)); err != nil {
						t.Fatal(err)
					}
				}
				for rows := 1; rows <= 17; rows++ {
					r0 := (rows * 7) % (total - rows + 1)
					rb := full.RowBytes
					// a copy each time: MatMul may interleave the rows in place (amd64)
					m, err := NewMatrix(typ, rows, cols, bytes.Clone(data)[r0*rb:(r0+rows)*rb])
					if err != nil {
						t.Fatal(err)
					}
					batch := 1 + (rows*3+nb)%20
					ys := make([][]float32, batch)
					for i := range ys {
						ys[i] = make([]float32, rows)
					}
					y := make([]float32, rows)
					MatVec(nil, m, &xs[0], y)
					MatMul(nil, m, xs[:batch], ys)
					for i := 0; i < rows; i++ {
						row := m.Row(i)
						for v := 0; v < batch; v++ {
							want := twin(row, &xs[v])
							got := map[string]float32{"MatMul": ys[v][i], "Dot": Dot(typ, row, &xs[v])}
							if v == 0 {
								got["MatVec"] = y[i]
							}
							for name, g := range got {
								ok := math.Float32bits(g) == math.Float32bits(want)
								switch {
								case name == "MatMul" && !batchExact:
									ok = math.Abs(float64(g-want)) <= 1e-6*absDot(row, xs[v].Q8)
								case !exact:
									ok = math.Abs(float64(g-want)) <= 1e-5*math.Abs(float64(want))+1e-5
								}
								if !ok {
									t.Fatalf("%s: %d rows (from row %d) of %d blocks, vector %d of %d, row %d (kernel %s): %s %v, Go twin %v",
										typ, rows, r0, nb, v, batch, i, Kernel(), name, g, want)
								}
							}
						}
					}
				}
			}
		}
		restore()
	}
	t.Logf("kernel %s: %s", Kernel(), fmt.Sprint(dotprodPaths()))
}
