package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ6_K: ql[128], qh[64], int8 scales[16], f16 d.
const BlockQ6_K = 210

func init() {
	register(format{typ: gguf.Q6_K, blockSize: QK_K, blockBytes: BlockQ6_K, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ6_K, QK_K, dequantQ6_K) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockQ6_K, quantizeQ6_KBlock) },
		dot:     dotQ6_KVec,
		rows:    rowsQ6_K,
	})
}

// q6k returns the four signed 6-bit quants at l of half n: elements 128n+l+32k, k = 0..3.
func q6k(ql, qh []byte, n, l int) (q1, q2, q3, q4 int32) {
	l8, h := ql[64*n:64*n+64], qh[32*n+l]
	q1 = int32(l8[l]&0xf|(h>>0&3)<<4) - 32
	q2 = int32(l8[l+32]&0xf|(h>>2&3)<<4) - 32
	q3 = int32(l8[l]>>4|(h>>4&3)<<4) - 32
	q4 = int32(l8[l+32]>>4|(h>>6&3)<<4) - 32
	return
}

func dequantQ6_K(blk []byte, y []float32) {
	ql := blk[0:128]
	qh := blk[128:192]
	sc := blk[192:208]
	d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	for n := 0; n < 2; n++ {
		s8 := sc[8*n : 8*n+8]
		out := y[128*n : 128*n+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1, q2, q3, q4 := q6k(ql, qh, n, l)
			out[l] = d * float32(int8(s8[is])) * float32(q1)
			out[l+32] = d * float32(int8(s8[is+2])) * float32(q2)
			out[l+64] = d * float32(int8(s8[is+4])) * float32(q3)
			out[l+96] = d * float32(int8(s8[is+6])) * float32(q4)
		}
	}
}

func dotQ6_K(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockQ6_K : (b+1)*BlockQ6_K]
		y := &v.K[b]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		var sumi int32
		for n := 0; n < 2; n++ {
			a := y.Qs[128*n : 128*n+128]
			for h := 0; h < 2; h++ { // l in [16h, 16h+16): scales 8n+h+2k
				var s1, s2, s3, s4 int32
				for l := 16 * h; l < 16*h+16; l++ {
					q1, q2, q3, q4 := q6k(ql, qh, n, l)
					s1 += q1 * int32(a[l])
					s2 += q2 * int32(a[l+32])
					s3 += q3 * int32(a[l+64])
					s4 += q4 * int32(a[l+96])
				}
				s8 := sc[8*n+h:]
				sumi += int32(int8(s8[0]))*s1 + int32(int8(s8[2]))*s2 + int32(int8(s8[4]))*s3 + int32(int8(s8[6]))*s4
			}
		}
		sum += float32(F16ToF32(binary.LittleEndian.Uint16(blk[208:])) * y.D * float32(sumi)) // unfused: the assembly's order
	}
	return sum
}
