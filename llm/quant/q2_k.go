package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockQ2_K: scales[16] (per 16 elements: low nibble scale, high nibble min), qs[64] (2-bit
// quants), f16 d, f16 dmin; x = d*scale*q - dmin*min. Element 16s+l of sub-block s sits in
// byte 32*(s/8) + 16*(s%2) + l at bit 2*((s%8)/2).
const BlockQ2_K = 84

func init() {
	register(format{typ: gguf.Q2_K, blockSize: QK_K, blockBytes: BlockQ2_K, vec: gguf.Q8_K,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockQ2_K, QK_K, dequantQ2_K) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, QK_K, BlockQ2_K, quantizeQ2_KBlock) },
		dot:     dotQ2_KVec,
		rows:    rowsQ2_K,
	})
}

// k16 returns the 16 bytes holding the 2-bit quants of sub-block s of a Q2_K/Q3_K block's qs
// and their shift.
func k16(qs []byte, s int) ([]byte, uint) {
	o := 32*(s/8) + 16*(s%2)
	return qs[o : o+16], uint(2 * ((s % 8) / 2))
}

func dequantQ2_K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[80:]))
	dmin := F16ToF32(binary.LittleEndian.Uint16(blk[82:]))
	for s := 0; s < 16; s++ {
		sc := blk[s]
		dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
		q, sh := k16(blk[16:80], s)
		out := y[16*s : 16*s+16]
		for l, b := range q {
			out[l] = float32(dl*float32(b>>sh&3)) - ml
		}
	}
}

// quantizeQ2_KBlock is ggml's quantize_row_q2_K_ref: a scale and min per 16 fitted by
// weighted absolute error (weights |x|), both quantized to 4 bits against the largest.
func quantizeQ2_KBlock(x []float32, y []byte) {
	var l [QK_K]uint8
	var scales, mins [16]float32
	var w [16]float32
	var maxScale, maxMin float32
	for j := 0; j < 16; j++ {
		xs := x[16*j : 16*j+16]
		for i, v := range xs {
			w[i] = float32(math.Abs(float64(v)))
		}
		scales[j], mins[j] = fitScaleMin(xs, w[:], l[16*j:16*j+16], 3, -0.5, 0.1, 15, true)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	clear(y)
	if maxScale > 0 {
		iscale := 15 / maxScale
		for j := 0; j < 16; j++ {
			y[j] = uint8(nearestInt(iscale * scales[j]))
		}
		binary.LittleEndian.PutUint16(y[80:], F32ToF16(maxScale/15))
	}
	if maxMin > 0 {
		iscale := 15 / maxMin
		for j := 0; j < 16; j++ {
			y[j] |= uint8(nearestInt(iscale*mins[j])) << 4
		}
		binary.LittleEndian.PutUint16(y[82:], F32ToF16(maxMin/15))
	}
	dq := F16ToF32(binary.LittleEndian.Uint16(y[80:]))
	dm := F16ToF32(binary.LittleEndian.Uint16(y[82:]))
	for j := 0; j < 16; j++ {
		d := dq * float32(y[j]&0xf)
		if d == 0 {
			continue
		}
		m := dm * float32(y[j]>>4)
		for i := 16 * j; i < 16*j+16; i++ {
			l[i] = uint8(max(0, min(3, nearestInt((x[i]+m)/d))))
		}
	}
	packK2(l[:], y[16:80])
}

// packK2 stores the low 2 bits of 256 levels in the 64 bytes of a Q2_K/Q3_K qs field.
func packK2(l []uint8, qs []byte) {
	for j := 0; j < QK_K; j += 128 {
		for i := 0; i < 32; i++ {
			qs[j/4+i] = l[j+i] | l[j+i+32]<<2 | l[j+i+64]<<4 | l[j+i+96]<<6
		}
	}
}

// fitScaleMin is ggml's make_qkx2_quants: levels 0..nmax for x ≈ scale*l - min (min ≥ 0
// returned), starting from the range of x and trying nstep+1 further scales
// (rmin + rdelta*is + nmax over the range), each refined by weighted least squares and kept if
// its weighted error (absolute with mad, else squared) is smaller.
func fitScaleMin(x, w []float32, l []uint8, nmax int, rmin, rdelta float32, nstep int, mad bool) (float32, float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		lo = min(lo, x[i])
		hi = max(hi, x[i])
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(l)
		return 0, -lo
	}
	errOf := func(scale, mn float32, i int, q uint8) float32 {
		diff := float32(float32(scale*float32(q))+mn) - x[i]
		if mad {
			return float32(math.Abs(float64(diff)))
		}
		return diff * diff
	}
	iscale := float32(nmax) / (hi - lo)
	scale := 1 / iscale
	var bestErr float32
	for i := range x {
		l[i] = uint8(max(0, min(int32(nmax), nearestInt(iscale*(x[i]-lo)))))
		bestErr += float32(w[i] * errOf(scale, lo, i, l[i]))
	}
	var aux [32]uint8
	la := aux[:n]
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range x {
			q := max(0, min(int32(nmax), nearestInt(iscale*(x[i]-lo))))
			la[i] = uint8(q)
			fl := float32(q)
			sumL += float32(w[i] * fl)
			sumL2 += float32(float32(w[i]*fl) * fl)
			sumXL += float32(float32(w[i]*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var e float32
			for i := range x {
				e += float32(w[i] * errOf(thisScale, thisMin, i, la[i]))
			}
			if e < bestErr {
				copy(l, la)
				bestErr, scale, lo = e, thisScale, thisMin
			}
		}
	}
	return scale, -lo
}

func dotQ2_K(row []byte, v *Vec) float32 {
	var sum float32
	for b := range v.K {
		blk := row[b*BlockQ2_K : (b+1)*BlockQ2_K]
		y := &v.K[b]
		var sumi, summ int32
		for s := 0; s < 16; s++ {
			q, sh := k16(blk[16:80], s)
			a := y.Qs[16*s : 16*s+16]
			var acc int32
			for l, c := range q {
				acc += int32(c>>sh&3) * int32(a[l])
			}
			sumi += int32(blk[s]&0xf) * acc
			summ += int32(blk[s]>>4) * int32(y.Bsums[s])
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk[80:])) * y.D
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[82:])) * y.D
		sum += float32(d*float32(sumi)) - float32(dmin*float32(summ)) // unfused: the assembly's order
	}
	return sum
}
