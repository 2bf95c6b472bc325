package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ3_K: hmask[32] (third bit of each quant), qs[64] (low 2 bits, laid out as Q2_K's),
// scales[12] (sixteen 6-bit scales, offset by 32), f16 d; x = d*(scale-32)*(q-4). The third
// bit of element 16s+l is bit s/2 of hmask[l + 16*(s%2)].
const BlockQ3_K = 110

func init() {
	register(format{typ: gguf.Q3_K, blockSize: QK_K, blockBytes: BlockQ3_K, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ3_K, QK_K, dequantQ3_K) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockQ3_K, quantizeQ3_KBlock) },
		dot:     dotQ3_KVec,
		rows:    rowsQ3_K,
	})
}

// q3kScales unpacks the sixteen 6-bit scales: the low nibbles of s < 8 in the low nibbles of
// bytes 0..7, of s >= 8 in their high nibbles; the 2 high bits of s in byte 8+s%4 at bit 2*(s/4).
func q3kScales(p []byte) (sc [16]int32) {
	for s := 0; s < 16; s++ {
		lo := p[s%8] >> (4 * (s / 8)) & 0xf
		hi := p[8+s%4] >> (2 * (s / 4)) & 3
		sc[s] = int32(lo|hi<<4) - 32
	}
	return sc
}

// q3k returns the signed 3-bit quant l (0..15) of sub-block s.
func q3k(blk []byte, s int, q []byte, sh uint, l int) int32 {
	v := int32(q[l] >> sh & 3)
	if blk[l+16*(s%2)]>>(s/2)&1 == 0 {
		v -= 4
	}
	return v
}

func dequantQ3_K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[108:]))
	sc := q3kScales(blk[96:108])
	for s := 0; s < 16; s++ {
		dl := d * float32(sc[s])
		q, sh := k16(blk[32:96], s)
		out := y[16*s : 16*s+16]
		for l := range out {
			out[l] = dl * float32(q3k(blk, s, q, sh, l))
		}
	}
}

// quantizeQ3_KBlock is ggml's quantize_row_q3_K_ref: a signed scale per 16 (fitScale3), the
// scales quantized to 6 bits against the largest in magnitude, then the levels redone with
// the quantized scales.
func quantizeQ3_KBlock(x []float32, y []byte) {
	var l [QK_K]int8
	var scales [16]float32
	var maxScale, amax float32
	for j := 0; j < 16; j++ {
		scales[j] = fitScale3(x[16*j:16*j+16], l[16*j:16*j+16], 4)
		if a := float32(math.Abs(float64(scales[j]))); a > amax {
			amax, maxScale = a, scales[j]
		}
	}
	clear(y)
	p := y[96:108]
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := 0; j < 16; j++ {
			q := max(-32, min(31, int8(nearestInt(iscale*scales[j])))) + 32
			p[j%8] |= uint8(q&0xf) << (4 * (j / 8))
			p[8+j%4] |= uint8(q>>4) << (2 * (j / 4))
		}
		binary.LittleEndian.PutUint16(y[108:], F32ToF16(1/iscale))
	}
	dq := F16ToF32(binary.LittleEndian.Uint16(y[108:]))
	sc := q3kScales(p)
	for j := 0; j < 16; j++ {
		d := dq * float32(sc[j])
		if d == 0 {
			continue
		}
		for i := 16 * j; i < 16*j+16; i++ {
			l[i] = int8(max(-4, min(3, nearestInt(x[i]/d)))) + 4
		}
	}
	var lu [QK_K]uint8
	for j := range l {
		lu[j] = uint8(l[j])
		if lu[j] > 3 {
			y[j%32] |= 1 << (j / 32)
			lu[j] -= 4
		}
	}
	packK2(lu[:], y[32:96])
}

// fitScale3 is ggml's make_q3_quants with its error search: levels -nmax..nmax-1 (stored
// offset by nmax in l) for the scale that maps the element of largest magnitude to -nmax,
// then up to five passes moving single levels while the weighted (x²) least-squares fit
// improves; it returns that fit's scale.
func fitScale3(x []float32, l []int8, nmax int32) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		clear(l)
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		q := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
		l[i] = int8(q)
		w := v * v
		sumlx += float32(float32(w*v) * float32(q))
		suml2 += float32(float32(w*float32(q)) * float32(q))
	}
	for try := 0; try < 5; try++ {
		changed := false
		for i, v := range x {
			w := v * v
			fl := float32(l[i])
			slx := sumlx - float32(float32(w*v)*fl)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*fl)*fl)
				nl := max(-nmax, min(nmax-1, nearestInt(float32(v*sl2)/slx)))
				if nl != int32(l[i]) {
					fn := float32(nl)
					slx += float32(float32(w*v) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						l[i] = int8(nl)
						sumlx, suml2 = slx, sl2
						changed = true
					}
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := range l {
		l[i] += int8(nmax)
	}
	return sumlx / suml2
}

func dotQ3_K(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockQ3_K : (b+1)*BlockQ3_K]
		y := &v.K[b]
		sc := q3kScales(blk[96:108])
		var sumi int32
		for s := 0; s < 16; s++ {
			q, sh := k16(blk[32:96], s)
			a := y.Qs[16*s : 16*s+16]
			var acc int32
			for l := range a {
				acc += q3k(blk, s, q, sh, l) * int32(a[l])
			}
			sumi += sc[s] * acc
		}
		sum += float32(F16ToF32(binary.LittleEndian.Uint16(blk[108:])) * y.D * float32(sumi)) // unfused: the assembly's order
	}
	return sum
}
