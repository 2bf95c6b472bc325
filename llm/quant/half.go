package quant

import (
	"math"

	"github.com/gorun-hpc/gorun/internal/half"
)

// f16Table maps every IEEE half to its float32 value: one load instead of bit surgery in the
// F16 dot product and in every scale of a quantized block.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = half.F16ToF32(uint16(i))
	}
	return &t
}()

// F16ToF32 converts an IEEE 754 half-precision value to float32 (exactly).
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 converts float32 to IEEE half with round-to-nearest-even, as the F16C instruction
// (and ggml's GGML_FP32_TO_FP16 on x86) does; overflow gives infinity, NaN stays NaN.
func F32ToF16(f float32) uint16 { return half.F32ToF16(f) }

// BF16ToF32 converts bfloat16 to float32 (exactly).
func BF16ToF32(h uint16) float32 { return half.BF16ToF32(h) }

// F32ToBF16 converts float32 to bfloat16 with round-to-nearest-even (ggml's rule); NaN stays
// NaN.
func F32ToBF16(f float32) uint16 { return half.F32ToBF16(f) }

func f32ToF16sGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}

func scaleRoundF16sGeneric(x []float32, a float32) {
	for i, f := range x {
		x[i] = F16ToF32(F32ToF16(a * f))
	}
}

func dotF16RowsGeneric(out []float32, q, k []uint16, stride, off int, scale float32) float32 {
	mx := float32(math.Inf(-1))
	for p := range out {
		out[p] = DotF16(q, k[p*stride+off:p*stride+off+len(q)]) * scale
		mx = max(mx, out[p])
	}
	return mx
}

func axpyF16RowsGeneric(out, w []float32, v []uint16, stride, off int) {
	for p, a := range w {
		AxpyF16(out, a, v[p*stride+off:p*stride+off+len(out)])
	}
}
