package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// BlockIQ4_NL: f16 d, qs[16] (nibbles as Q4_0) indexing the non-linear levels iq4Values.
const BlockIQ4_NL = 18

// iq4Values are the 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
var iq4Values = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func init() {
	register(format{typ: gguf.IQ4_NL, blockSize: 32, blockBytes: BlockIQ4_NL, vec: gguf.Q8_0,
		dequant: func(src []byte, dst []float32) { blocks(src, dst, BlockIQ4_NL, 32, dequantIQ4_NL) },
		quant:   func(src []float32, dst []byte) { qblocks(src, dst, 32, BlockIQ4_NL, quantizeIQ4_NLBlock) },
		dot:     dotIQ4_NLVec,
	})
}

func dequantIQ4_NL(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	for j, q := range blk[2:18] {
		y[j] = d * float32(iq4Values[q&0xf])
		y[j+16] = d * float32(iq4Values[q>>4])
	}
}

// iq4Index is the level nearest x (ties to the upper one), as ggml's best_index_int8. Its
// bisection ends at the first level above x; the levels are integers, so that level is the
// first one above floor(x), which iq4Above holds for every floor in range. The final
// comparison is the bisection's, in float32.
func iq4Index(x float32) uint8 {
	x = float32(x) // a product passed as x is rounded before the subtractions below
	v := &iq4Values
	if !(x < float32(v[15])) { // NaN too: the bisection would end at the top level
		return 15
	}
	if x <= float32(v[0]) {
		return 0
	}
	f := int32(x) // x in (-127, 113): truncation toward zero, then down for negatives
	if float32(f) > x {
		f--
	}
	hi := iq4Above[f-int32(v[0])]
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return hi - 1
	}
	return hi
}

// iq4Above[f-iq4Values[0]] is the index of the first level above f, for f in [-127, 112].
var iq4Above = func() (t [240]uint8) {
	for i := range t {
		f := i + int(iq4Values[0])
		for k, v := range iq4Values {
			if int(v) > f {
				t[i] = uint8(k)
				break
			}
		}
	}
	return t
}()

// iq4Fit fits one block of 32 (the first step of ggml's quantize_row_iq4_nl_impl): levels
// for the scale that puts the element of largest magnitude at level 0 (sign by flip: ggml's
// IQ4_NL reference takes max/-127, IQ4_XS -max/-127), then the least-squares scale for those
// levels with weights x², and, for ntry > 0, the best of 2*ntry+1 further scales. It
// returns the scale (0 for an all-zero block) and writes the levels to l.
func iq4Fit(x []float32, l []uint8, ntry int) float32 {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		clear(l)
		return 0
	}
	v0 := float32(iq4Values[0])
	d := mx / v0
	if ntry > 0 {
		d = -mx / v0
	}
	id := 1 / d
	var sumqx, sumq2 float32
	for j, xv := range x {
		k := iq4Index(id * xv)
		l[j] = k
		q := float32(iq4Values[k])
		w := xv * xv
		sumqx += float32(float32(w*q) * xv)
		sumq2 += float32(float32(w*q) * q)
	}
	d = sumqx / sumq2
	best := d * sumqx
	for itry := -ntry; itry <= ntry; itry++ {
		id = float32(itry+int(iq4Values[0])) / mx
		sumqx, sumq2 = 0, 0
		for _, xv := range x {
			q := float32(iq4Values[iq4Index(id*xv)])
			w := xv * xv
			sumqx += float32(float32(w*q) * xv)
			sumq2 += float32(float32(w*q) * q)
		}
		if sumq2 > 0 && sumqx*sumqx > best*sumq2 {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// quantizeIQ4_NLBlock is what llama-quantize writes without an importance matrix (ggml's
// quantize_iq4_nl; its quantize_row_iq4_nl_ref tries no further scales): the best of 15
// scales, then the levels redone for it (for the scale before its rounding to F16, as ggml).
func quantizeIQ4_NLBlock(x []float32, y []byte) {
	var l [32]uint8
	d := iq4Fit(x, l[:], 7)
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j, v := range x {
		l[j] = iq4Index(id * v)
	}
	for j := 0; j < 16; j++ {
		y[2+j] = l[j] | l[j+16]<<4
	}
}

func dotIQ4_NL(row []byte, v *Vec) float32 {
	var sum float32
	for b := 0; b < len(v.D); b++ {
		wb := row[b*BlockIQ4_NL : (b+1)*BlockIQ4_NL]
		xq := v.Q8[b*BlockQ8_0+2 : (b+1)*BlockQ8_0]
		var acc int32
		for j, q := range wb[2:18] {
			acc += int32(iq4Values[q&0xf])*int32(int8(xq[j])) + int32(iq4Values[q>>4])*int32(int8(xq[j+16]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * v.D[b])
	}
	return sum
}
