package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ5_K: f16 d, f16 dmin, scales[12], qh[32], qs[128].
const BlockQ5_K = 176

func init() {
	register(format{typ: gguf.Q5_K, blockSize: QK_K, blockBytes: BlockQ5_K, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ5_K, QK_K, dequantQ5_K) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockQ5_K, quantizeQ5_KBlock) },
		dot:     dotQ5_KVec,
		rows:    rowsQ5_K,
	})
}

// q5k returns the 5-bit quants of sub-blocks 2j and 2j+1 at position l.
func q5k(ql, qh []byte, j, l int) (lo, hi uint8) {
	lo, hi = ql[32*j+l]&0xf, ql[32*j+l]>>4
	lo |= (qh[l] >> (2 * j) & 1) << 4
	hi |= (qh[l] >> (2*j + 1) & 1) << 4
	return lo, hi
}

func dequantQ5_K(blk []byte, y []float32) {
	le := binary.LittleEndian
	d := F16ToF32(le.Uint16(blk))
	dmin := F16ToF32(le.Uint16(blk[2:]))
	scales := blk[4:16]
	qh := blk[16:48]
	ql := blk[48:176]
	for j := 0; j < 4; j++ {
		sc, m := scaleMinK4(2*j, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(2*j+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		out := y[64*j : 64*j+64]
		for l := 0; l < 32; l++ {
			lo, hi := q5k(ql, qh, j, l)
			out[l] = float32(d1*float32(lo)) - m1
			out[l+32] = float32(d2*float32(hi)) - m2
		}
	}
}

func dotQ5_K(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockQ5_K : (b+1)*BlockQ5_K]
		y := &v.K[b]
		scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
		var sumi, summ int32
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			a := y.Qs[64*j : 64*j+64]
			var s1, s2 int32
			for l := 0; l < 32; l++ {
				lo, hi := q5k(ql, qh, j, l)
				s1 += int32(lo) * int32(a[l])
				s2 += int32(hi) * int32(a[l+32])
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
