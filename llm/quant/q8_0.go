package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

const (
	QK8_0     = 32
	BlockQ8_0 = 34 // f16 d, int8 qs[32]
)

func init() {
	register(format{typ: gguf.Q8_0, blockSize: QK8_0, blockBytes: BlockQ8_0, vec: gguf.Q8_0,
		dequant: func(src []byte, dst []float32) {
			blocks(src, dst, BlockQ8_0, QK8_0, func(b []byte, y []float32) {
				d := F16ToF32(binary.LittleEndian.Uint16(b))
				for j := range y {
					y[j] = d * float32(int8(b[2+j]))
				}
			})
		},
		quant: func(src []float32, dst []byte) { qblocks(src, dst, QK8_0, BlockQ8_0, quantizeQ8_0Ref) },
		dot:   dotQ8_0Vec,
	})
}

// quantizeQ8_0Ref is ggml's quantize_row_q8_0_ref, which writes Q8_0 weights: d = amax/127,
// q = round(x/d) with ties away from zero. (Activations take quantizeQ8_0, the CPU backend's
// rule, which scales by 127/amax and rounds ties to even.)
func quantizeQ8_0Ref(x []float32, y []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	for j, v := range x {
		y[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// quantizeQ8_0Generic is the x86 (AVX2) rule of llama.cpp's quantize_row_q8_0, which is what its CPU
// backend applies to activations: d = amax/127, q = round-half-even(x * 127/amax).
func quantizeQ8_0Generic(src []float32, dst []byte) {
	for b := 0; b < len(src)/QK8_0; b++ {
		x := src[b*QK8_0 : (b+1)*QK8_0]
		y := dst[b*BlockQ8_0 : (b+1)*BlockQ8_0]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		binary.LittleEndian.PutUint16(y, F32ToF16(d))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range x {
			y[2+j] = byte(int8(math.RoundToEven(float64(v * id))))
		}
	}
}

// dotQ8_0Generic: per block, an exact integer dot product scaled by both block scales.
func dotQ8_0Generic(w, x []byte) float32 {
	var sum float32
	nb := len(x) / BlockQ8_0
	w = w[:nb*BlockQ8_0]
	for b := 0; b < nb; b++ {
		wb := w[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		xb := x[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		var acc int32
		for j := 2; j < BlockQ8_0; j += 4 {
			acc += int32(int8(wb[j]))*int32(int8(xb[j])) + int32(int8(wb[j+1]))*int32(int8(xb[j+1])) +
				int32(int8(wb[j+2]))*int32(int8(xb[j+2])) + int32(int8(wb[j+3]))*int32(int8(xb[j+3]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * F16ToF32(binary.LittleEndian.Uint16(xb)))
	}
	return sum
}
