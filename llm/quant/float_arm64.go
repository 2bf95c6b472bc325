//go:build arm64 && !noasm

package quant

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// The float paths on arm64: NEON kernels (float_arm64.s) for the F32/F16 weight rows, the F16
// KV-cache attention and the F16 conversions. They and the Go tails here (lengths that are
// not a multiple of a kernel's step) do the float operations of amd64's AVX2 kernels and
// tails in the same order, so both give the same bits. The tails' products are wrapped in
// float32(...) so that the compiler does not fuse them into the sums (it would on arm64; amd64
// rounds each product); TestFloatKernelsMatchTwins checks every length 1..70.

//go:noescape
func dotF16NEON(a, b *byte, n int) float32

//go:noescape
func dotF32NEON(w *byte, x *float32, n int) float32

//go:noescape
func axpyF16NEON(out *float32, a float32, v *byte, n int)

//go:noescape
func dotF16RowsNEON(q, k *uint16, stride, n, hd int, scale float32, out *float32) float32

//go:noescape
func axpyF16RowsNEON(out, w *float32, v *uint16, stride, n, hd int)

//go:noescape
func f32ToF16NEON(dst *uint16, src *float32, n int)

//go:noescape
func roundF16NEON(x *float32, n int, a float32)

func dotQ8_0(w, x []byte) float32 { return dotQ8_0Generic(w, x) }
func dotQ4_0(w, x []byte) float32 { return dotQ4_0Generic(w, x) }

func dot4x2(m *Matrix, i int, a, b *Vec, ya, yb []float32) bool { return false }

// packGroup: no interleaved kernels here (the NEON ones read rows in the file's layout).
func packGroup(t gguf.Type) int { return 0 }

func gemvAsm(m *Matrix, x *Vec, y []float32, g0, g1 int) bool { return false }

func gemmAsm(m *Matrix, xs []Vec, ys [][]float32, g0, g1 int) bool { return false }

func quantizeQ8_0(src []float32, dst []byte) { quantizeQ8_0Generic(src, dst) }

// dotF32 is the F32 weight row's dot product: 32 lanes by NEON, then dotF32Tail.
func dotF32(row []byte, x []float32) float32 {
	n := len(x)
	m := n &^ 31
	row = row[:4*n]
	if m == 0 {
		return dotF32Tail(row, x)
	}
	s := dotF32NEON(&row[0], &x[0], m)
	if m < n {
		s += dotF32Tail(row[4*m:], x[m:])
	}
	return s
}

// dotF32Tail is dotF32Generic with every product rounded before it is added.
func dotF32Tail(row []byte, x []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(x)
	row = row[:4*n]
	w := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) }
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += float32(w(i) * x[i])
		s1 += float32(w(i+1) * x[i+1])
		s2 += float32(w(i+2) * x[i+2])
		s3 += float32(w(i+3) * x[i+3])
	}
	for ; i < n; i++ {
		s0 += float32(w(i) * x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16 is the F16 weight row's dot product with the activations as halves: 16 lanes by
// NEON, then dotF16Tail.
func dotF16(row []byte, x []uint16) float32 {
	n := len(x)
	m := n &^ 15
	row = row[:2*n]
	if m == 0 {
		return dotF16Tail(row, x)
	}
	s := dotF16NEON(&row[0], (*byte)(unsafe.Pointer(&x[0])), m)
	if m < n {
		s += dotF16Tail(row[2*m:], x[m:])
	}
	return s
}

// dotF16Tail is dotF16Generic with every product rounded before it is added.
func dotF16Tail(row []byte, x []uint16) float32 {
	var s0, s1 float32
	n := len(x)
	row = row[:2*n]
	w := func(i int) float32 { return F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) }
	i := 0
	for ; i+2 <= n; i += 2 {
		s0 += float32(w(i) * F16ToF32(x[i]))
		s1 += float32(w(i+1) * F16ToF32(x[i+1]))
	}
	for ; i < n; i++ {
		s0 += float32(w(i) * F16ToF32(x[i]))
	}
	return s0 + s1
}

// DotF16 returns the dot product of two F16 vectors, accumulated in float32.
func DotF16(a, b []uint16) float32 {
	n := len(a)
	m := n &^ 15
	b = b[:n]
	if m == 0 {
		return dotU16Tail(a, b)
	}
	s := dotF16NEON((*byte)(unsafe.Pointer(&a[0])), (*byte)(unsafe.Pointer(&b[0])), m)
	if m < n {
		s += dotU16Tail(a[m:], b[m:])
	}
	return s
}

// dotU16Tail is dotU16Generic with every product rounded before it is added.
func dotU16Tail(a, b []uint16) float32 {
	var s float32
	b = b[:len(a)]
	for i, x := range a {
		s += float32(F16ToF32(x) * F16ToF32(b[i]))
	}
	return s
}

// AxpyF16 adds a times the F16 vector v to out: fused by NEON in steps of 8, the rest
// rounded product then sum.
func AxpyF16(out []float32, a float32, v []uint16) {
	n := len(out)
	m := n &^ 7
	v = v[:n]
	if m > 0 {
		axpyF16NEON(&out[0], a, (*byte)(unsafe.Pointer(&v[0])), m)
	}
	for i := m; i < n; i++ {
		out[i] += float32(a * F16ToF32(v[i]))
	}
}

// DotF16Rows sets out[p] = DotF16(q, k[p*stride+off : p*stride+off+len(q)]) * scale for
// p < len(out) and returns their maximum (-Inf for none).
func DotF16Rows(out []float32, q, k []uint16, stride, off int, scale float32) float32 {
	n, hd := len(out), len(q)
	if n == 0 {
		return float32(math.Inf(-1))
	}
	_ = k[(n-1)*stride+off+hd-1]
	if hd%16 != 0 || hd == 0 {
		return dotF16RowsGeneric(out, q, k, stride, off, scale)
	}
	return dotF16RowsNEON(&q[0], &k[off], 2*stride, n, hd, scale, &out[0])
}

// AxpyF16Rows adds w[p] times v[p*stride+off : p*stride+off+len(out)] to out for p < len(w),
// as AxpyF16 once per p in order.
func AxpyF16Rows(out, w []float32, v []uint16, stride, off int) {
	n, hd := len(w), len(out)
	if n == 0 {
		return
	}
	_ = v[(n-1)*stride+off+hd-1]
	if hd%16 != 0 || hd == 0 {
		axpyF16RowsGeneric(out, w, v, stride, off)
		return
	}
	axpyF16RowsNEON(&out[0], &w[0], &v[off], 2*stride, n, hd)
}

// F32ToF16s converts src to IEEE halves in dst (F32ToF16 of each).
func F32ToF16s(dst []uint16, src []float32) {
	n := len(src)
	m := n &^ 7
	dst = dst[:n]
	if m > 0 {
		f32ToF16NEON(&dst[0], &src[0], m)
	}
	f32ToF16sGeneric(dst[m:], src[m:])
}

// ScaleRoundF16s sets each value v of x to a*v rounded to the nearest IEEE half
// (F16ToF32(F32ToF16(a*v))).
func ScaleRoundF16s(x []float32, a float32) {
	n := len(x)
	m := n &^ 7
	if m > 0 {
		roundF16NEON(&x[0], m, a)
	}
	scaleRoundF16sGeneric(x[m:], a)
}
