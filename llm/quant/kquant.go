package quant

import (
	"encoding/binary"
	"math"
)

// The reference quantizers of Q4_K, Q5_K and Q6_K (ggml's quantize_row_q{4,5,6}_K_ref).

// quantizeQ45K fills the d, dmin and scales fields of a Q4_K/Q5_K block for x (256) and
// writes the levels 0..nmax to l: each sub-block of 32 fitted as scale*l - min with weights
// rms(x)+|x| (nstep further scales from rmin), the scales and mins quantized to 6 bits against
// the largest, then the levels redone with the quantized values.
func quantizeQ45K(x []float32, y []byte, l []uint8, nmax int, rmin float32, nstep int) {
	var scales, mins [8]float32
	var w [32]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		av := float32(math.Sqrt(float64(sumX2 / 32)))
		for i, v := range xs {
			w[i] = av + float32(math.Abs(float64(v)))
		}
		scales[j], mins[j] = fitScaleMin(xs, w[:], l[32*j:32*j+32], nmax, rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	clear(sc)
	for j := 0; j < 8; j++ {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j], sc[j+4] = ls, lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(maxScale/63))
	binary.LittleEndian.PutUint16(y[2:], F32ToF16(maxMin/63))
	dq := F16ToF32(binary.LittleEndian.Uint16(y))
	dm := F16ToF32(binary.LittleEndian.Uint16(y[2:]))
	for j := 0; j < 8; j++ {
		s, m := scaleMinK4(j, sc)
		d := dq * float32(s)
		if d == 0 {
			continue
		}
		mm := dm * float32(m)
		for i := 32 * j; i < 32*j+32; i++ {
			l[i] = uint8(max(0, min(int32(nmax), nearestInt((x[i]+mm)/d))))
		}
	}
}

func quantizeQ4_KBlock(x []float32, y []byte) {
	var l [QK_K]uint8
	quantizeQ45K(x, y, l[:], 15, -1, 20)
	q := y[16:144]
	for j := 0; j < 4; j++ {
		for i := 0; i < 32; i++ {
			q[32*j+i] = l[64*j+i] | l[64*j+i+32]<<4
		}
	}
}

func quantizeQ5_KBlock(x []float32, y []byte) {
	var l [QK_K]uint8
	quantizeQ45K(x, y, l[:], 31, -0.5, 15)
	qh, ql := y[16:48], y[48:176]
	clear(qh)
	for j := 0; j < 4; j++ {
		for i := 0; i < 32; i++ {
			l1, l2 := l[64*j+i], l[64*j+i+32]
			if l1 > 15 {
				l1 -= 16
				qh[i] |= 1 << (2 * j)
			}
			if l2 > 15 {
				l2 -= 16
				qh[i] |= 2 << (2 * j)
			}
			ql[32*j+i] = l1 | l2<<4
		}
	}
}

// fitSigned is ggml's make_qx_quants with weights x² (rmse_type 1): levels -nmax..nmax-1
// (stored offset by nmax) for the scale mapping the element of largest magnitude to -nmax,
// the least-squares scale for them, and 18 nearby scales tried; it returns the best scale.
func fitSigned(x []float32, l []int8, nmax int32) float32 {
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
	level := func(iscale, v float32) int32 { return max(-nmax, min(nmax-1, nearestInt(iscale*v))) }
	sums := func(iscale float32) (sumlx, suml2 float32) {
		for _, v := range x {
			fl := float32(level(iscale, v))
			w := v * v
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		return
	}
	iscale := float32(-nmax) / mx
	for i, v := range x {
		l[i] = int8(level(iscale, v) + nmax)
	}
	sumlx, suml2 := sums(iscale)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / mx
		sumlx, suml2 = sums(iscale)
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l[i] = int8(level(iscale, v) + nmax)
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

func quantizeQ6_KBlock(x []float32, y []byte) {
	var l [QK_K]int8
	var scales [16]float32
	var maxScale, maxAbs float32
	for ib := 0; ib < 16; ib++ {
		scales[ib] = fitSigned(x[16*ib:16*ib+16], l[16*ib:16*ib+16], 32)
		if a := float32(math.Abs(float64(scales[ib]))); a > maxAbs {
			maxAbs, maxScale = a, scales[ib]
		}
	}
	clear(y)
	if maxAbs < 1e-15 {
		return
	}
	iscale := -128 / maxScale
	binary.LittleEndian.PutUint16(y[208:], F32ToF16(1/iscale))
	sc := y[192:208]
	for ib := range scales {
		sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	dq := F16ToF32(binary.LittleEndian.Uint16(y[208:]))
	for j := 0; j < 16; j++ {
		d := dq * float32(int8(sc[j]))
		if d == 0 {
			continue
		}
		for i := 16 * j; i < 16*j+16; i++ {
			l[i] = int8(max(-32, min(31, nearestInt(x[i]/d))) + 32)
		}
	}
	ql, qh := y[0:128], y[128:192]
	for n := 0; n < 2; n++ {
		L := l[128*n : 128*n+128]
		for i := 0; i < 32; i++ {
			q1, q2, q3, q4 := uint8(L[i]), uint8(L[i+32]), uint8(L[i+64]), uint8(L[i+96])
			ql[64*n+i] = q1&0xf | (q3&0xf)<<4
			ql[64*n+i+32] = q2&0xf | (q4&0xf)<<4
			qh[32*n+i] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}
