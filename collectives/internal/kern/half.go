package kern

import "github.com/gorun-hpc/gorun/internal/half"

// F16ToF32 widens an IEEE 754 binary16 value (exactly).
func F16ToF32(h uint16) float32 { return half.F16ToF32(h) }

// F32ToF16 narrows f to binary16, rounding to nearest, ties to even.
func F32ToF16(f float32) uint16 { return half.F32ToF16(f) }

// BF16ToF32 widens a bfloat16.
func BF16ToF32(h uint16) float32 { return half.BF16ToF32(h) }

// F32ToBF16 narrows f to bfloat16, rounding to nearest, ties to even.
func F32ToBF16(f float32) uint16 { return half.F32ToBF16(f) }

// halfChunk bounds the float32 scratch the half-precision kernels keep on the stack.
const halfChunk = 256

// ReduceF16 applies the float32 kernel k to binary16 data: widen, reduce, round back.
func ReduceF16(in, inout []uint16, k func(in, inout []float32)) {
	reduceHalf(in, inout, k, F16ToF32, F32ToF16)
}

// SumF16 adds binary16 vectors (inout[i] = in[i] + inout[i], in float32, rounded to nearest
// even), with F16C conversions where the CPU has them.
func SumF16(in, inout []uint16) {
	in = in[:len(inout)]
	m := sumF16Vec(in, inout)
	ReduceF16(in[m:], inout[m:], SumFloat32)
}

// ReduceBF16 applies the float32 kernel k to bfloat16 data.
func ReduceBF16(in, inout []uint16, k func(in, inout []float32)) {
	reduceHalf(in, inout, k, BF16ToF32, F32ToBF16)
}

func reduceHalf(in, inout []uint16, k func(in, inout []float32), widen func(uint16) float32, narrow func(float32) uint16) {
	var a, b [halfChunk]float32
	in = in[:len(inout)]
	for off := 0; off < len(inout); off += halfChunk {
		n := min(halfChunk, len(inout)-off)
		x, y := in[off:off+n], inout[off:off+n]
		for i := range n {
			a[i] = widen(x[i])
			b[i] = widen(y[i])
		}
		k(a[:n], b[:n])
		for i := range n {
			y[i] = narrow(b[i])
		}
	}
}
