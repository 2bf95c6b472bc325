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
	Type gguf.Type // representation: F32, F16, BF16 or Q8_0
	N    int       // elements
	F32  []float32 // Type F32
	U16  []uint16  // Type F16 or BF16
	Q8   []byte    // Type Q8_0 blocks
	// Q8Sum8 holds 8 x the sum of each Q8_0 block's quants: the Q4_0 kernels multiply the
	// unsigned nibbles and subtract this instead of offsetting every nibble by 8.
	Q8Sum8 []int32
	// Q8Neg8 is -Q8Sum8 (the row kernels start each block's integer sum from it) and D the
	// blocks' scales as float32, converted once per vector instead of once per row.
	Q8Neg8 []int32
	D      []float32
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
	case gguf.Q8_0:
		if len(x)%QK8_0 != 0 {
			return fmt.Errorf("quant: vector of %d elements is not a whole number of Q8_0 blocks", len(x))
		}
		nb := len(x) / QK8_0
		v.Q8 = grow(v.Q8, nb*BlockQ8_0)
		quantizeQ8_0(x, v.Q8)
		v.resum()
	}
	return nil
}

// resum recomputes Q8Sum8, Q8Neg8 and D from Q8.
func (v *Vec) resum() {
	nb := len(v.Q8) / BlockQ8_0
	v.Q8Sum8 = grow(v.Q8Sum8, nb)
	v.Q8Neg8 = grow(v.Q8Neg8, nb)
	v.D = grow(v.D, nb)
	for b := 0; b < nb; b++ {
		blk := v.Q8[b*BlockQ8_0 : (b+1)*BlockQ8_0]
		var s int32
		for _, q := range blk[2:] {
			s += int32(int8(q))
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

// Dot returns the dot product of one row of weight type w (row holds v.N elements) with v,
// which must have been loaded for w.
func Dot(w gguf.Type, row []byte, v *Vec) float32 {
	switch w {
	case gguf.F32:
		return dotF32(row, v.F32)
	case gguf.F16:
		return dotF16(row, v.U16)
	case gguf.BF16:
		return dotBF16(row, v.U16)
	case gguf.Q8_0:
		return dotQ8_0Vec(row, v)
	case gguf.Q4_0:
		return dotQ4_0Vec(row, v)
	case gguf.Q4_K:
		return dotK(row, v.F32, BlockQ4_K, dequantQ4_K)
	case gguf.Q5_K:
		return dotK(row, v.F32, BlockQ5_K, dequantQ5_K)
	case gguf.Q6_K:
		return dotK(row, v.F32, BlockQ6_K, dequantQ6_K)
	}
	panic(fmt.Sprintf("quant: Dot on unsupported type %s", w)) // callers check Supported
}

func dotF32Generic(row []byte, x []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(x)
	row = row[:4*n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * x[i]
		s1 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+4:])) * x[i+1]
		s2 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+8:])) * x[i+2]
		s3 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+12:])) * x[i+3]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotF16Generic(row []byte, x []uint16) float32 {
	var s0, s1 float32
	n := len(x)
	row = row[:2*n]
	i := 0
	for ; i+2 <= n; i += 2 {
		s0 += F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * F16ToF32(x[i])
		s1 += F16ToF32(binary.LittleEndian.Uint16(row[2*i+2:])) * F16ToF32(x[i+1])
	}
	for ; i < n; i++ {
		s0 += F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * F16ToF32(x[i])
	}
	return s0 + s1
}

func dotBF16(row []byte, x []uint16) float32 {
	var s0, s1 float32
	n := len(x)
	row = row[:2*n]
	for i := 0; i < n; i++ {
		p := BF16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * BF16ToF32(x[i])
		if i&1 == 0 {
			s0 += p
		} else {
			s1 += p
		}
	}
	return s0 + s1
}

// dotQ8_0Generic: per block, an exact integer dot product scaled by both block scales.
func dotQ8_0Generic(w, x []byte) float32 {
	var sum float32
	nb := len(x) / BlockQ8_0
	w = w[:nb*BlockQ8_0]
	for b := 0; b < nb; b++ {
		wb := w[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		xb := x[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		var acc int32
		for j := 2; j < BlockQ8_0; j += 4 {
			acc += int32(int8(wb[j]))*int32(int8(xb[j])) + int32(int8(wb[j+1]))*int32(int8(xb[j+1])) +
				int32(int8(wb[j+2]))*int32(int8(xb[j+2])) + int32(int8(wb[j+3]))*int32(int8(xb[j+3]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * F16ToF32(binary.LittleEndian.Uint16(xb)))
	}
	return sum
}

// dotQ4_0Generic: Q4_0 weights (nibbles offset by 8) against Q8_0 activations.
func dotQ4_0Generic(w, x []byte) float32 {
	var sum float32
	nb := len(x) / BlockQ8_0
	w = w[:nb*BlockQ4_0]
	for b := 0; b < nb; b++ {
		wb := w[b*BlockQ4_0 : b*BlockQ4_0+BlockQ4_0]
		xb := x[b*BlockQ8_0 : b*BlockQ8_0+BlockQ8_0]
		var acc int32
		for j := 0; j < 16; j++ {
			q := wb[2+j]
			acc += (int32(q&0xf)-8)*int32(int8(xb[2+j])) + (int32(q>>4)-8)*int32(int8(xb[18+j]))
		}
		sum += float32(acc) * (F16ToF32(binary.LittleEndian.Uint16(wb)) * F16ToF32(binary.LittleEndian.Uint16(xb)))
	}
	return sum
}

func dotK(row []byte, x []float32, blockBytes int, deq func([]byte, []float32)) float32 {
	var tmp [QK_K]float32
	var sum float32
	for b := 0; b < len(x)/QK_K; b++ {
		deq(row[b*blockBytes:(b+1)*blockBytes], tmp[:])
		xb := x[b*QK_K : (b+1)*QK_K]
		var s0, s1, s2, s3 float32
		for j := 0; j < QK_K; j += 4 {
			s0 += tmp[j] * xb[j]
			s1 += tmp[j+1] * xb[j+1]
			s2 += tmp[j+2] * xb[j+2]
			s3 += tmp[j+3] * xb[j+3]
		}
		sum += (s0 + s1) + (s2 + s3)
	}
	return sum
}

func dotU16Generic(a, b []uint16) float32 {
	var s float32
	for i, x := range a {
		s += F16ToF32(x) * F16ToF32(b[i])
	}
	return s
}

func axpyU16Generic(out []float32, a float32, v []uint16) {
	for i, x := range v {
		out[i] += a * F16ToF32(x)
	}
}
