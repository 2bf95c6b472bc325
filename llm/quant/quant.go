// Package quant holds the tensor element types of GGUF models: dequantization, reference
// quantizers and the dot products of matrix-vector products, with llama.cpp's block layouts
// (ggml-common.h). As in llama.cpp, the activation side of a dot product is converted to the
// weight type's "vector dot type" first: Q8_0 blocks for Q8_0 and Q4_0 weights, F16 for F16,
// BF16 for BF16, and plain float32 for F32 and the K-quants (whose dot products here
// dequantize one block at a time).
package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Block layouts (bytes).
const (
	QK8_0      = 32
	BlockQ8_0  = 34 // f16 d, int8 qs[32]
	QK4_0      = 32
	BlockQ4_0  = 18 // f16 d, uint8 qs[16]: low nibbles are elements 0..15, high 16..31
	QK_K       = 256
	BlockQ4_K  = 144 // f16 d, f16 dmin, scales[12] (6-bit scale and min per 32), qs[128]
	BlockQ5_K  = 176 // f16 d, f16 dmin, scales[12], qh[32], qs[128]
	BlockQ6_K  = 210 // ql[128], qh[64], int8 scales[16], f16 d
	kScaleSize = 12
)

// Supported reports whether this package has kernels for t.
func Supported(t gguf.Type) bool {
	switch t {
	case gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		return true
	}
	return false
}

// VecType is the representation an activation vector takes before a dot product with rows of
// weight type t (ggml's vec_dot_type, except the K-quants, which use float32 here).
func VecType(t gguf.Type) gguf.Type {
	switch t {
	case gguf.F16, gguf.BF16, gguf.Q8_0:
		return t
	case gguf.Q4_0:
		return gguf.Q8_0
	}
	return gguf.F32
}

func checkLen(t gguf.Type, nbytes, n int) error {
	if !Supported(t) {
		return fmt.Errorf("quant: tensor type %s is not supported (supported: F32 F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K)", t)
	}
	want, err := t.RowBytes(int64(n))
	if err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	if int64(nbytes) != want {
		return fmt.Errorf("quant: %d elements of %s take %d bytes, have %d", n, t, want, nbytes)
	}
	return nil
}

// Dequantize converts len(dst) elements of type t from src to float32.
func Dequantize(t gguf.Type, src []byte, dst []float32) error {
	if err := checkLen(t, len(src), len(dst)); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch t {
	case gguf.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case gguf.F16:
		for i := range dst {
			dst[i] = F16ToF32(le.Uint16(src[2*i:]))
		}
	case gguf.BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le.Uint16(src[2*i:]))
		}
	case gguf.Q8_0:
		for b := 0; b < len(dst)/QK8_0; b++ {
			blk := src[b*BlockQ8_0 : (b+1)*BlockQ8_0]
			d := F16ToF32(le.Uint16(blk))
			for j := 0; j < QK8_0; j++ {
				dst[b*QK8_0+j] = d * float32(int8(blk[2+j]))
			}
		}
	case gguf.Q4_0:
		for b := 0; b < len(dst)/QK4_0; b++ {
			dequantQ4_0(src[b*BlockQ4_0:(b+1)*BlockQ4_0], dst[b*QK4_0:(b+1)*QK4_0])
		}
	case gguf.Q4_K:
		for b := 0; b < len(dst)/QK_K; b++ {
			dequantQ4_K(src[b*BlockQ4_K:(b+1)*BlockQ4_K], dst[b*QK_K:(b+1)*QK_K])
		}
	case gguf.Q5_K:
		for b := 0; b < len(dst)/QK_K; b++ {
			dequantQ5_K(src[b*BlockQ5_K:(b+1)*BlockQ5_K], dst[b*QK_K:(b+1)*QK_K])
		}
	case gguf.Q6_K:
		for b := 0; b < len(dst)/QK_K; b++ {
			dequantQ6_K(src[b*BlockQ6_K:(b+1)*BlockQ6_K], dst[b*QK_K:(b+1)*QK_K])
		}
	}
	return nil
}

func dequantQ4_0(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	qs := blk[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
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
			out[l] = d1*float32(qq[l]&0xf) - m1
			out[l+32] = d2*float32(qq[l]>>4) - m2
		}
	}
}

func dequantQ5_K(blk []byte, y []float32) {
	le := binary.LittleEndian
	d := F16ToF32(le.Uint16(blk))
	dmin := F16ToF32(le.Uint16(blk[2:]))
	scales := blk[4:16]
	qh := blk[16:48]
	ql := blk[48:176]
	u1, u2 := uint8(1), uint8(2)
	for j := 0; j < 4; j++ {
		sc, m := scaleMinK4(2*j, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(2*j+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		qq := ql[32*j : 32*j+32]
		out := y[64*j : 64*j+64]
		for l := 0; l < 32; l++ {
			lo, hi := qq[l]&0xf, qq[l]>>4
			if qh[l]&u1 != 0 {
				lo += 16
			}
			if qh[l]&u2 != 0 {
				hi += 16
			}
			out[l] = d1*float32(lo) - m1
			out[l+32] = d2*float32(hi) - m2
		}
		u1 <<= 2
		u2 <<= 2
	}
}

func dequantQ6_K(blk []byte, y []float32) {
	ql := blk[0:128]
	qh := blk[128:192]
	sc := blk[192:208]
	d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	for n := 0; n < 2; n++ {
		l8 := ql[64*n : 64*n+64]
		h8 := qh[32*n : 32*n+32]
		s8 := sc[8*n : 8*n+8]
		out := y[128*n : 128*n+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(l8[l]&0xf|(h8[l]>>0&3)<<4) - 32
			q2 := int(l8[l+32]&0xf|(h8[l]>>2&3)<<4) - 32
			q3 := int(l8[l]>>4|(h8[l]>>4&3)<<4) - 32
			q4 := int(l8[l+32]>>4|(h8[l]>>6&3)<<4) - 32
			out[l] = d * float32(int8(s8[is])) * float32(q1)
			out[l+32] = d * float32(int8(s8[is+2])) * float32(q2)
			out[l+64] = d * float32(int8(s8[is+4])) * float32(q3)
			out[l+96] = d * float32(int8(s8[is+6])) * float32(q4)
		}
	}
}

// Quantize converts src to type t (F32, F16, BF16, Q8_0 or Q4_0) with llama.cpp's reference
// quantizers, writing t.RowBytes(len(src)) bytes to dst. Used to write model files.
func Quantize(t gguf.Type, src []float32, dst []byte) error {
	if err := checkLen(t, len(dst), len(src)); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch t {
	case gguf.F32:
		for i, v := range src {
			le.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case gguf.F16:
		for i, v := range src {
			le.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case gguf.BF16:
		for i, v := range src {
			le.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case gguf.Q8_0:
		quantizeQ8_0(src, dst)
	case gguf.Q4_0:
		for b := 0; b < len(src)/QK4_0; b++ {
			quantizeQ4_0Block(src[b*QK4_0:(b+1)*QK4_0], dst[b*BlockQ4_0:(b+1)*BlockQ4_0])
		}
	default:
		return fmt.Errorf("quant: no quantizer for %s (F32 F16 BF16 Q8_0 Q4_0 have one)", t)
	}
	return nil
}

// quantizeQ8_0Generic is the x86 (AVX2) rule of llama.cpp's quantize_row_q8_0, which is what its CPU
// backend applies to activations: d = amax/127, q = round-half-even(x * 127/amax).
func quantizeQ8_0Generic(src []float32, dst []byte) {
	for b := 0; b < len(src)/QK8_0; b++ {
		x := src[b*QK8_0 : (b+1)*QK8_0]
		y := dst[b*BlockQ8_0 : (b+1)*BlockQ8_0]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		binary.LittleEndian.PutUint16(y, F32ToF16(d))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range x {
			y[2+j] = byte(int8(math.RoundToEven(float64(v * id))))
		}
	}
}

func quantizeQ4_0Block(x []float32, y []byte) {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); amax < a {
			amax, mx = a, v
		}
	}
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, F32ToF16(d))
	for j := 0; j < 16; j++ {
		x0 := min(15, int8(x[j]*id+8.5))
		x1 := min(15, int8(x[j+16]*id+8.5))
		y[2+j] = uint8(x0) | uint8(x1)<<4
	}
}
