package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ5_1: f16 d, f16 m, qh[4], qs[16] (as Q5_0); x = d*q + m.
const BlockQ5_1 = 24

func init() {
	register(format{typ: gguf.Q5_1, blockSize: 32, blockBytes: BlockQ5_1, vec: gguf.Q8_1,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ5_1, 32, dequantQ5_1) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, 32, BlockQ5_1, quantizeQ5_1Block) },
		dot:     dotQ5_1,
		rows:    rowsQ5_1,
	})
}

func dequantQ5_1(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	m := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	qh := binary.LittleEndian.Uint32(blk[4:])
	qs := blk[8:24]
	for j := 0; j < 16; j++ {
		a, b := q5(qh, qs, j)
		y[j] = float32(float32(a)*d) + m
		y[j+16] = float32(float32(b)*d) + m
	}
}

// quantizeQ5_1Block is ggml's quantize_row_q5_1_ref: d spans [min, max] in 31 steps.
func quantizeQ5_1Block(x []float32, y []byte) {
	lo, hi := minMax32(x)
	d := (hi - lo) / 31
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	binary.LittleEndian.PutUint16(y[2:], F32ToF16(lo))
	var qh uint32
	for j := 0; j < 16; j++ {
		x0 := truncU8(float32((x[j]-lo)*id) + 0.5)
		x1 := truncU8(float32((x[j+16]-lo)*id) + 0.5)
		y[8+j] = x0&0xf | (x1&0xf)<<4
		qh |= uint32(x0>>4&1)<<j | uint32(x1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(y[4:], qh)
}

func dotQ5_1(row []byte, v *Vec) float32 {
	var sum float32
	for b := 0; b < len(v.D); b++ {
		wb := row[b*BlockQ5_1 : (b+1)*BlockQ5_1]
		xq := v.Q8[b*BlockQ8_0+2 : (b+1)*BlockQ8_0]
		qh := binary.LittleEndian.Uint32(wb[4:])
		var acc int32
		for j := 0; j < 16; j++ {
			a, c := q5(qh, wb[8:24], j)
			acc += int32(a)*int32(int8(xq[j])) + int32(c)*int32(int8(xq[j+16]))
		}
		d := F16ToF32(binary.LittleEndian.Uint16(wb))
		m := F16ToF32(binary.LittleEndian.Uint16(wb[2:]))
		sum += d*v.D[b]*float32(acc) + m*v.S[b]
	}
	return sum
}
