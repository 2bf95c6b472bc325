package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ4_K: f16 d, f16 dmin, scales[12] (6-bit scale and min per 32), qs[128].
const BlockQ4_K = 144

const kScaleSize = 12

func init() {
	register(format{typ: gguf.Q4_K, blockSize: QK_K, blockBytes: BlockQ4_K, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ4_K, QK_K, dequantQ4_K) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockQ4_K, quantizeQ4_KBlock) },
		dot:     dotQ4_KVec,
		rows:    rowsQ4_K,
	})
}

// scaleMinK4 extracts the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes
// of a Q4_K/Q5_K block: sub-blocks 0..3 keep theirs in the low 6 bits of bytes j and j+4;
// 4..7 split theirs between a nibble of bytes 8..11 and the top 2 bits of bytes 0..7.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func dequantQ4_K(blk []byte, y []float32) {
	le := binary.LittleEndian
	d := F16ToF32(le.Uint16(blk))
	dmin := F16ToF32(le.Uint16(blk[2:]))
	scales := blk[4:16]
	q := blk[16:144]
	for j := 0; j < 4; j++ {
		sc, m := scaleMinK4(2*j, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(2*j+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		qq := q[32*j : 32*j+32]
		out := y[64*j : 64*j+64]
		for l := 0; l < 32; l++ {
			out[l] = float32(d1*float32(qq[l]&0xf)) - m1
			out[l+32] = float32(d2*float32(qq[l]>>4)) - m2
		}
	}
}

// dotQ4_K: per block, integer sums of quants times Q8_K quants weighted by the sub-block
// scales, and the mins against Q8_K's sums of 16; two float products per block.
func dotQ4_K(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockQ4_K : (b+1)*BlockQ4_K]
		y := &v.K[b]
		scales, q := blk[4:16], blk[16:144]
		var sumi, summ int32
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			qq, a := q[32*j:32*j+32], y.Qs[64*j:64*j+64]
			var s1, s2 int32
			for l := 0; l < 32; l++ {
				s1 += int32(qq[l]&0xf) * int32(a[l])
				s2 += int32(qq[l]>>4) * int32(a[l+32])
			}
			sumi += int32(sc1)*s1 + int32(sc2)*s2
			summ += int32(m1)*int32(y.Bsums[4*j]+y.Bsums[4*j+1]) + int32(m2)*int32(y.Bsums[4*j+2]+y.Bsums[4*j+3])
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * y.D
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:])) * y.D
		sum += float32(d*float32(sumi)) - float32(dmin*float32(summ)) // unfused: the assembly's order
	}
	return sum
}
