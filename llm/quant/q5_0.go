package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ5_0: f16 d, qh[4] (bit j: high bit of element j), qs[16] (low nibbles as Q4_0);
// x = d*(q-16).
const BlockQ5_0 = 22

func init() {
	register(format{typ: gguf.Q5_0, blockSize: 32, blockBytes: BlockQ5_0, vec: gguf.Q8_0,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ5_0, 32, dequantQ5_0) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, 32, BlockQ5_0, quantizeQ5_0Block) },
		dot:     dotQ5_0,
		rows:    rowsQ5_0,
	})
}

// q5 returns the 5-bit quants of elements j and j+16 of a Q5_0/Q5_1 block from its qh word
// and packed nibbles.
func q5(qh uint32, qs []byte, j int) (uint8, uint8) {
	return qs[j]&0xf | uint8(qh>>j&1)<<4, qs[j]>>4 | uint8(qh>>(j+16)&1)<<4
}

func dequantQ5_0(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	qh := binary.LittleEndian.Uint32(blk[2:])
	qs := blk[6:22]
	for j := 0; j < 16; j++ {
		a, b := q5(qh, qs, j)
		y[j] = float32(int32(a)-16) * d
		y[j+16] = float32(int32(b)-16) * d
	}
}

// quantizeQ5_0Block is ggml's quantize_row_q5_0_ref: the element of largest magnitude maps to
// -16.
func quantizeQ5_0Block(x []float32, y []byte) {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); amax < a {
			amax, mx = a, v
		}
	}
	d := mx / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	var qh uint32
	for j := 0; j < 16; j++ {
		x0 := min(31, truncI8(float32(x[j]*id)+16.5))
		x1 := min(31, truncI8(float32(x[j+16]*id)+16.5))
		y[6+j] = uint8(x0)&0xf | (uint8(x1)&0xf)<<4
		qh |= uint32(uint8(x0)>>4&1)<<j | uint32(uint8(x1)>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(y[2:], qh)
}

// truncI8 is C's (int8_t) conversion of a float in [0, 127], bounded against NaN and overflow.
func truncI8(f float32) int8 {
	if !(f >= 0) {
		return 0
	}
	if f >= 127 {
		return 127
	}
	return int8(f)
}

func dotQ5_0(row []byte, v *Vec) float32 {
	var sum float32
	for b := 0; b < len(v.D); b++ {
		wb := row[b*BlockQ5_0 : (b+1)*BlockQ5_0]
		xq := v.Q8[b*BlockQ8_0+2 : (b+1)*BlockQ8_0]
		qh := binary.LittleEndian.Uint32(wb[2:])
		var acc int32
		for j := 0; j < 16; j++ {
			a, c := q5(qh, wb[6:22], j)
			acc += (int32(a)-16)*int32(int8(xq[j])) + (int32(c)-16)*int32(int8(xq[j+16]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * v.D[b])
	}
	return sum
}
