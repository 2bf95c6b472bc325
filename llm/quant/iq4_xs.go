package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockIQ4_XS: f16 d, u16 scales_h (2 high bits per sub-block), scales_l[4] (4 low bits per
// sub-block), qs[128] (per 32: nibbles as IQ4_NL); sub-block ib has scale d*(ls-32), ls 6 bits.
const BlockIQ4_XS = 136

func init() {
	register(format{typ: gguf.IQ4_XS, blockSize: QK_K, blockBytes: BlockIQ4_XS, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockIQ4_XS, QK_K, dequantIQ4_XS) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockIQ4_XS, quantizeIQ4_XSBlock) },
		dot:     dotIQ4_XSVec,
		rows:    rowsIQ4_XS,
	})
}

func iq4xsScale(blk []byte, ib int) int32 {
	sh := binary.LittleEndian.Uint16(blk[2:])
	return int32(blk[4+ib/2]>>(4*(ib%2))&0xf|uint8(sh>>(2*ib)&3)<<4) - 32
}

func dequantIQ4_XS(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	for ib := 0; ib < 8; ib++ {
		dl := d * float32(iq4xsScale(blk, ib))
		qs := blk[8+16*ib : 8+16*ib+16]
		out := y[32*ib : 32*ib+32]
		for j, q := range qs {
			out[j] = dl * float32(iq4Values[q&0xf])
			out[j+16] = dl * float32(iq4Values[q>>4])
		}
	}
}

// quantizeIQ4_XSBlock is ggml's quantize_row_iq4_xs_ref: each sub-block of 32 fitted as IQ4_NL
// with 15 scales tried, the scales quantized to 6 bits against the largest, the levels refitted
// to the quantized scales.
func quantizeIQ4_XSBlock(x []float32, y []byte) {
	var l [QK_K]uint8
	var scales [8]float32
	var maxScale, amaxScale float32
	for ib := range scales {
		d := iq4Fit(x[32*ib:32*ib+32], l[32*ib:32*ib+32], 7)
		scales[ib] = d
		if a := float32(math.Abs(float64(d))); a > amaxScale {
			amaxScale, maxScale = a, d
		}
	}
	d := -maxScale / 32
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	var id float32
	if d != 0 {
		id = 1 / d
	}
	var sh uint16
	clear(y[4:8])
	for ib := range scales {
		ls := max(-32, min(31, nearestInt(id*scales[ib])))
		dl := d * float32(ls)
		var idl float32
		if dl != 0 {
			idl = 1 / dl
		}
		for j := 32 * ib; j < 32*ib+32; j++ {
			l[j] = iq4Index(idl * x[j])
		}
		ls += 32
		y[4+ib/2] |= uint8(ls&0xf) << (4 * (ib % 2))
		sh |= uint16(ls>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(y[2:], sh)
	for ib := 0; ib < 8; ib++ {
		for j := 0; j < 16; j++ {
			y[8+16*ib+j] = l[32*ib+j] | l[32*ib+16+j]<<4
		}
	}
}

func dotIQ4_XS(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockIQ4_XS : (b+1)*BlockIQ4_XS]
		y := &v.K[b]
		var sumi int32
		for ib := 0; ib < 8; ib++ {
			qs, a := blk[8+16*ib:8+16*ib+16], y.Qs[32*ib:32*ib+32]
			var s int32
			for j, q := range qs {
				s += int32(iq4Values[q&0xf])*int32(a[j]) + int32(iq4Values[q>>4])*int32(a[j+16])
			}
			sumi += iq4xsScale(blk, ib) * s
		}
		sum += F16ToF32(binary.LittleEndian.Uint16(blk)) * y.D * float32(sumi)
	}
	return sum
}
