package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ4_1: f16 d, f16 m, qs[16] (low nibbles elements 0..15, high 16..31); x = d*q + m.
const BlockQ4_1 = 20

func init() {
	register(format{typ: gguf.Q4_1, blockSize: 32, blockBytes: BlockQ4_1, vec: gguf.Q8_1,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ4_1, 32, dequantQ4_1) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, 32, BlockQ4_1, quantizeQ4_1Block) },
		dot:     dotQ4_1,
		rows:    rowsQ4_1,
	})
}

func dequantQ4_1(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	m := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	for j, q := range blk[4:20] {
		y[j] = float32(float32(q&0xf)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

// minMax32 returns the smallest and largest of x (ggml's loop: FLT_MAX and -FLT_MAX start).
func minMax32(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// quantizeQ4_1Block is ggml's quantize_row_q4_1_ref: d spans [min, max] in 15 steps, quants
// round half up.
func quantizeQ4_1Block(x []float32, y []byte) {
	lo, hi := minMax32(x)
	d := (hi - lo) / 15
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	binary.LittleEndian.PutUint16(y[2:], F32ToF16(lo))
	for j := 0; j < 16; j++ {
		x0 := min(15, truncU8(float32((x[j]-lo)*id)+0.5))
		x1 := min(15, truncU8(float32((x[j+16]-lo)*id)+0.5))
		y[4+j] = x0 | x1<<4
	}
}

// truncU8 is C's conversion of a non-negative float to an integer (toward zero), bounded so
// that an out-of-range value (NaN, huge) cannot wrap around.
func truncU8(f float32) uint8 {
	if !(f >= 0) {
		return 0
	}
	if f >= 255 {
		return 255
	}
	return uint8(f)
}

// dotQ4_1 against Q8_1: d_w*d_x times the integer block sum, plus m_w times the activation
// block's stored d*sum (ggml's order).
func dotQ4_1(row []byte, v *Vec) float32 {
	var sum float32
	for b := 0; b < len(v.D); b++ {
		wb := row[b*BlockQ4_1 : (b+1)*BlockQ4_1]
		xq := v.Q8[b*BlockQ8_0+2 : (b+1)*BlockQ8_0]
		var acc int32
		for j, q := range wb[4:20] {
			acc += int32(q&0xf)*int32(int8(xq[j])) + int32(q>>4)*int32(int8(xq[j+16]))
		}
		d := F16ToF32(binary.LittleEndian.Uint16(wb))
		m := F16ToF32(binary.LittleEndian.Uint16(wb[2:]))
		sum += d*v.D[b]*float32(acc) + m*v.S[b]
	}
	return sum
}
