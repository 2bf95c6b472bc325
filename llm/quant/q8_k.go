package quant

import "math"

// QK_K is the block length of the K-quants, IQ4_XS and Q8_K.
const QK_K = 256

// BlockQ8K is ggml's block_q8_K, the activation side of the K-quant and IQ4_XS dot products:
// 256 int8 quants, their float32 scale and the sums of each 16 quants.
type BlockQ8K struct {
	D     float32
	Qs    [QK_K]int8
	Bsums [QK_K / 16]int16
}

// nearestInt rounds to the nearest integer, ties to even, by ggml's rule (adding 1.5*2^23 and
// reading the mantissa), which is exact for |f| < 2^22. The conversion keeps a product passed
// as f from being fused with the addition (arm64), which would round differently from ggml.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func quantizeQ8_KGeneric(x []float32, y []BlockQ8K) {
	for b := range y {
		quantizeQ8_KBlock(x[b*QK_K:(b+1)*QK_K], &y[b])
	}
}

// quantizeQ8_KBlock is ggml's quantize_row_q8_K_ref for one block: the element of largest
// magnitude maps to -127 (d = max/-127), every other to round(x/d), capped at 127.
func quantizeQ8_KBlock(x []float32, y *BlockQ8K) {
	x = x[:QK_K]
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax == 0 {
		*y = BlockQ8K{}
		return
	}
	iscale := -127 / mx
	for j, v := range x {
		y.Qs[j] = int8(min(127, nearestInt(iscale*v)))
	}
	for j := range y.Bsums {
		var s int16
		for _, q := range y.Qs[16*j : 16*j+16] {
			s += int16(q)
		}
		y.Bsums[j] = s
	}
	y.D = 1 / iscale
}
