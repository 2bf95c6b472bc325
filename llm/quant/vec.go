package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Vec is an activation vector prepared for dot products with the rows of one weight type:
// converted once, used for every row.
type Vec struct {
	Type gguf.Type // representation: F32, F16, BF16, Q8_0, Q8_1 or Q8_K
	N    int       // elements
	F32  []float32 // Type F32
	U16  []uint16  // Type F16 or BF16
	Q8   []byte    // Type Q8_0 and Q8_1: Q8_0 blocks
	// Q8Sum8 holds 8 x the sum of each Q8_0 block's quants: the Q4_0 kernels multiply the
	// unsigned nibbles and subtract this instead of offsetting every nibble by 8.
	Q8Sum8 []int32
	// Q8Neg8 is -Q8Sum8 (the row kernels start each block's integer sum from it) and D the
	// blocks' scales as float32, converted once per vector instead of once per row.
	Q8Neg8 []int32
	D      []float32
	// Q8Neg128 holds -128 x the sum of each four consecutive quants (eight per block): the
	// interleaved Q8_0 kernels store weights +128 and keep sums of four apart.
	Q8Neg128 []int32
	// S is Q8_1's second field per block: d times the sum of the block's quants, rounded
	// to F16 as ggml stores it (the min terms of Q4_1 and Q5_1 weights multiply it).
	S []float32
	// K holds the Q8_K blocks of Type Q8_K.
	K []BlockQ8K
}

// Load prepares x for rows of weight type w, reusing v's buffers.
func (v *Vec) Load(w gguf.Type, x []float32) error {
	t := VecType(w)
	v.Type, v.N = t, len(x)
	switch t {
	case gguf.F32:
		v.F32 = x
	case gguf.F16, gguf.BF16:
		v.U16 = grow(v.U16, len(x))
		conv := F32ToF16
		if t == gguf.BF16 {
			conv = F32ToBF16
		}
		for i, f := range x {
			v.U16[i] = conv(f)
		}
	case gguf.Q8_0, gguf.Q8_1:
		if len(x)%QK8_0 != 0 {
			return fmt.Errorf("quant: vector of %d elements is not a whole number of %s blocks", len(x), t)
		}
		nb := len(x) / QK8_0
		v.Q8 = grow(v.Q8, nb*BlockQ8_0)
		quantizeQ8_0(x, v.Q8)
		v.resum()
		if t == gguf.Q8_1 {
			v.q8_1Sums(x)
		}
	case gguf.Q8_K:
		if len(x)%QK_K != 0 {
			return fmt.Errorf("quant: vector of %d elements is not a whole number of Q8_K blocks", len(x))
		}
		v.K = grow(v.K, len(x)/QK_K)
		quantizeQ8_K(x, v.K)
	default:
		return fmt.Errorf("quant: no activation conversion to %s", t)
	}
	return nil
}

// q8_1Sums fills S: ggml's Q8_1 quantizer (x86) rounds like Q8_0 and stores
// F16(d * sum of quants) with d = amax/127 before its own rounding to F16.
func (v *Vec) q8_1Sums(x []float32) {
	nb := len(x) / QK8_0
	v.S = grow(v.S, nb)
	for b := 0; b < nb; b++ {
		var amax float32
		for _, f := range x[b*QK8_0 : (b+1)*QK8_0] {
			amax = max(amax, float32(math.Abs(float64(f))))
		}
		v.S[b] = F16ToF32(F32ToF16(amax / 127 * float32(v.Q8Sum8[b]/8)))
	}
}

// resum recomputes Q8Sum8, Q8Neg8, Q8Neg128 and D from Q8.
func (v *Vec) resum() {
	nb := len(v.Q8) / BlockQ8_0
	v.Q8Sum8 = grow(v.Q8Sum8, nb)
	v.Q8Neg8 = grow(v.Q8Neg8, nb)
	v.D = grow(v.D, nb)
	v.Q8Neg128 = grow(v.Q8Neg128, 8*nb)
	for b := 0; b < nb; b++ {
		blk := v.Q8[b*BlockQ8_0 : (b+1)*BlockQ8_0]
		var s int32
		for k := 0; k < 8; k++ {
			q := blk[2+4*k : 6+4*k]
			s4 := int32(int8(q[0])) + int32(int8(q[1])) + int32(int8(q[2])) + int32(int8(q[3]))
			v.Q8Neg128[8*b+k] = -128 * s4
			s += s4
		}
		v.Q8Sum8[b] = 8 * s
		v.Q8Neg8[b] = -8 * s
		v.D[b] = F16ToF32(binary.LittleEndian.Uint16(blk))
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
