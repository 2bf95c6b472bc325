package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

const (
	QK4_0     = 32
	BlockQ4_0 = 18 // f16 d, uint8 qs[16]: low nibbles are elements 0..15, high 16..31
)

func init() {
	register(format{typ: gguf.Q4_0, blockSize: QK4_0, blockBytes: BlockQ4_0, vec: gguf.Q8_0,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ4_0, QK4_0, dequantQ4_0) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK4_0, BlockQ4_0, quantizeQ4_0Block) },
		dot:     dotQ4_0Vec,
	})
}

func dequantQ4_0(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	qs := blk[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func quantizeQ4_0Block(x []float32, y []byte) {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); amax < a {
			amax, mx = a, v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	for j := 0; j < 16; j++ {
		x0 := min(15, int8(float32(x[j]*id)+8.5))
		x1 := min(15, int8(float32(x[j+16]*id)+8.5))
		y[2+j] = uint8(x0) | uint8(x1)<<4
	}
}

// dotQ4_0Generic: Q4_0 weights (nibbles offset by 8) against Q8_0 activations.
func dotQ4_0Generic(w, x []byte) float32 {
	var sum float32
	nb := len(x) / BlockQ8_0
	w = w[:nb*BlockQ4_0]
	for b := 0; b < nb; b++ {
		wb := w[b*BlockQ4_0 : b*BlockQ4_0+BlockQ4_0]
		xb := x[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		var acc int32
		for j := 0; j < 16; j++ {
			q := wb[2+j]
			acc += (int32(q&0xf)-8)*int32(int8(xb[2+j])) + (int32(q>>4)-8)*int32(int8(xb[18+j]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * F16ToF32(binary.LittleEndian.Uint16(xb)))
	}
	return sum
}
