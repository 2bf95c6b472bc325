//go:build amd64 && !noasm

package quant

import (
	"math"
	"unsafe"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly kernels (AVX2, FMA and F16C, detected at run time).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// useVNNI selects the VPDPBUSD forms of the two-vector kernels.
var useVNNI = useAVX2 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL

//go:noescape
func dotQ8_0AVX2(w, x *byte, nb int) float32

//go:noescape
func dotQ4_0AVX2(w, x *byte, nb int) float32

//go:noescape
func dotF32AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotF16AVX2(w, x *byte, n int) float32

//go:noescape
func dotQ8_0x4AVX2(w *byte, stride int, x *byte, nb int, out *float32)

//go:noescape
func dotQ4_0x4AVX2(w *byte, stride int, x *byte, xsum8 *int32, nb int, out *float32)

// dot4 computes the dot products of rows i..i+3 of m with v into y[i..i+3] when a four-row
// kernel exists for m's type, and reports whether it did.
func dot4(m *Matrix, i int, v *Vec, y []float32) bool {
	if !useAVX2 {
		return false
	}
	nb := v.N / QK8_0
	if nb == 0 {
		return false
	}
	rows := m.Data[i*m.RowBytes : (i+4)*m.RowBytes]
	out := (*float32)(unsafe.Pointer(&y[i : i+4][0]))
	switch m.Type {
	case gguf.Q8_0:
		_ = v.Q8[nb*BlockQ8_0-1]
		dotQ8_0x4AVX2(&rows[0], m.RowBytes, &v.Q8[0], nb, out)
		return true
	case gguf.Q4_0:
		_ = v.Q8[nb*BlockQ8_0-1]
		_ = v.Q8Sum8[nb-1]
		dotQ4_0x4AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.Q8Sum8[0], nb, out)
		return true
	}
	return false
}

//go:noescape
func dotQ8_0x4x2AVX2(w *byte, stride int, x0, x1 *byte, nb int, out0, out1 *float32)

//go:noescape
func dotQ4_0x4x2AVX2(w *byte, stride int, x0, x1 *byte, s0, s1 *int32, nb int, out0, out1 *float32)

//go:noescape
func dotQ8_0x4x2VNNI(w *byte, stride int, x0, x1 *byte, nb int, out0, out1 *float32)

//go:noescape
func dotQ4_0x4x2VNNI(w *byte, stride int, x0, x1 *byte, s0, s1 *int32, nb int, out0, out1 *float32)

// dot4x2 is dot4 for two vectors at once (rows i..i+3 against a and b).
func dot4x2(m *Matrix, i int, a, b *Vec, ya, yb []float32) bool {
	if !useAVX2 {
		return false
	}
	nb := a.N / QK8_0
	if nb == 0 || b.N != a.N || (m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0) {
		return false
	}
	rows := m.Data[i*m.RowBytes : (i+4)*m.RowBytes]
	oa := (*float32)(unsafe.Pointer(&ya[i : i+4][0]))
	ob := (*float32)(unsafe.Pointer(&yb[i : i+4][0]))
	_, _ = a.Q8[nb*BlockQ8_0-1], b.Q8[nb*BlockQ8_0-1]
	switch m.Type {
	case gguf.Q8_0:
		if useVNNI {
			dotQ8_0x4x2VNNI(&rows[0], m.RowBytes, &a.Q8[0], &b.Q8[0], nb, oa, ob)
		} else {
			dotQ8_0x4x2AVX2(&rows[0], m.RowBytes, &a.Q8[0], &b.Q8[0], nb, oa, ob)
		}
		return true
	case gguf.Q4_0:
		_, _ = a.Q8Sum8[nb-1], b.Q8Sum8[nb-1]
		if useVNNI {
			dotQ4_0x4x2VNNI(&rows[0], m.RowBytes, &a.Q8[0], &b.Q8[0], &a.Q8Sum8[0], &b.Q8Sum8[0], nb, oa, ob)
		} else {
			dotQ4_0x4x2AVX2(&rows[0], m.RowBytes, &a.Q8[0], &b.Q8[0], &a.Q8Sum8[0], &b.Q8Sum8[0], nb, oa, ob)
		}
		return true
	}
	return false
}

//go:noescape
func matVecQ8_0AVX2(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)

//go:noescape
func matVecQ8_0VNNI(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)

//go:noescape
func matVecQ4_0AVX2(w *byte, stride int, x *byte, xd *float32, neg8 *int32, nb, rows int, out *float32)

//go:noescape
func matVecQ4_0VNNI(w *byte, stride int, x *byte, xd *float32, neg8 *int32, nb, rows int, out *float32)

// matVecRows computes y[lo:hi] with a row-streaming kernel when one exists for m's type, and
// reports whether it did.
func matVecRows(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	if m.Type == gguf.IQ4_NL {
		return iq4nlRows(m, v, y, lo, hi)
	}
	nb := v.N / QK8_0
	if !useAVX2 || nb == 0 || hi <= lo || v.N != m.Cols || len(v.D) < nb || (m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0) {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_, _ = v.Q8[nb*BlockQ8_0-1], v.D[nb-1]
	out := &y[lo:hi][0]
	switch m.Type {
	case gguf.Q8_0:
		if useVNNI {
			matVecQ8_0VNNI(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, out)
		} else {
			matVecQ8_0AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, out)
		}
	case gguf.Q4_0:
		_ = v.Q8Neg8[nb-1]
		if useVNNI {
			matVecQ4_0VNNI(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.Q8Neg8[0], nb, hi-lo, out)
		} else {
			matVecQ4_0AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.Q8Neg8[0], nb, hi-lo, out)
		}
	}
	return true
}

//go:noescape
func quantizeQ8_0AVX2(src *float32, dst *byte, nb int)

func quantizeQ8_0(src []float32, dst []byte) {
	nb := len(src) / QK8_0
	if !useAVX2 || nb == 0 {
		quantizeQ8_0Generic(src, dst)
		return
	}
	_ = dst[nb*BlockQ8_0-1]
	quantizeQ8_0AVX2(&src[0], &dst[0], nb)
}

//go:noescape
func f32ToF16AVX2(dst *uint16, src *float32, n int)

// F32ToF16s converts src to IEEE halves in dst (F32ToF16 of each).
func F32ToF16s(dst []uint16, src []float32) {
	n := len(src)
	m := n &^ 7
	dst = dst[:n]
	if useAVX2 && m > 0 {
		f32ToF16AVX2(&dst[0], &src[0], m)
	}
	f32ToF16sGeneric(dst[m:], src[m:])
}

//go:noescape
func roundF16AVX2(x *float32, n int, a float32)

// ScaleRoundF16s sets each value v of x to a*v rounded to the nearest IEEE half
// (F16ToF32(F32ToF16(a*v))).
func ScaleRoundF16s(x []float32, a float32) {
	n := len(x)
	m := n &^ 7
	if useAVX2 && m > 0 {
		roundF16AVX2(&x[0], m, a)
	}
	scaleRoundF16sGeneric(x[m:], a)
}

//go:noescape
func dotF16RowsAVX2(q, k *uint16, stride, n, hd int, scale float32, out *float32) float32

//go:noescape
func axpyF16RowsAVX2(out, w *float32, v *uint16, stride, n, hd int)

// DotF16Rows sets out[p] = DotF16(q, k[p*stride+off : p*stride+off+len(q)]) * scale for
// p < len(out) and returns their maximum (-Inf for none).
func DotF16Rows(out []float32, q, k []uint16, stride, off int, scale float32) float32 {
	n, hd := len(out), len(q)
	if n == 0 {
		return float32(math.Inf(-1))
	}
	_ = k[(n-1)*stride+off+hd-1]
	if !useAVX2 || hd%16 != 0 || hd == 0 {
		return dotF16RowsGeneric(out, q, k, stride, off, scale)
	}
	return dotF16RowsAVX2(&q[0], &k[off], 2*stride, n, hd, scale, &out[0])
}

// AxpyF16Rows adds w[p] times v[p*stride+off : p*stride+off+len(out)] to out for p < len(w),
// as AxpyF16 once per p in order.
func AxpyF16Rows(out, w []float32, v []uint16, stride, off int) {
	n, hd := len(w), len(out)
	if n == 0 {
		return
	}
	_ = v[(n-1)*stride+off+hd-1]
	if !useAVX2 || hd%32 != 0 || hd == 0 {
		axpyF16RowsGeneric(out, w, v, stride, off)
		return
	}
	axpyF16RowsAVX2(&out[0], &w[0], &v[off], 2*stride, n, hd)
}

//go:noescape
func axpyF16AVX2(out *float32, a float32, v *byte, n int)

// DotF16 returns the dot product of two F16 vectors, accumulated in float32.
func DotF16(a, b []uint16) float32 {
	n := len(a)
	m := n &^ 15
	b = b[:n]
	if !useAVX2 || m == 0 {
		return dotU16Generic(a, b)
	}
	s := dotF16AVX2((*byte)(unsafe.Pointer(&a[0])), (*byte)(unsafe.Pointer(&b[0])), m)
	if m < n {
		s += dotU16Generic(a[m:], b[m:])
	}
	return s
}

// AxpyF16 adds a times the F16 vector v to out.
func AxpyF16(out []float32, a float32, v []uint16) {
	n := len(out)
	m := n &^ 7
	v = v[:n]
	if useAVX2 && m > 0 {
		axpyF16AVX2(&out[0], a, (*byte)(unsafe.Pointer(&v[0])), m)
	}
	axpyU16Generic(out[m:], a, v[m:])
}

func dotQ8_0Vec(w []byte, v *Vec) float32 { return dotQ8_0(w, v.Q8) }

func dotQ8_0(w, x []byte) float32 {
	nb := len(x) / BlockQ8_0
	if !useAVX2 || nb == 0 {
		return dotQ8_0Generic(w, x)
	}
	_ = w[nb*BlockQ8_0-1] // the kernel reads nb blocks of both
	return dotQ8_0AVX2(&w[0], &x[0], nb)
}

//go:noescape
func dotQ4_0TotAVX2(w, x *byte, xsum8 *int32, nb int) float32

func dotQ4_0(w, x []byte) float32 {
	nb := len(x) / BlockQ8_0
	if !useAVX2 || nb == 0 {
		return dotQ4_0Generic(w, x)
	}
	_ = w[nb*BlockQ4_0-1]
	return dotQ4_0AVX2(&w[0], &x[0], nb)
}

// dotQ4_0Vec is the Q4_0 dot product used by Dot: block totals in integers, llama.cpp's order.
func dotQ4_0Vec(w []byte, v *Vec) float32 {
	nb := v.N / QK8_0
	if !useAVX2 || nb == 0 || len(v.Q8Sum8) < nb {
		return dotQ4_0(w, v.Q8)
	}
	_ = w[nb*BlockQ4_0-1]
	_ = v.Q8[nb*BlockQ8_0-1]
	return dotQ4_0TotAVX2(&w[0], &v.Q8[0], &v.Q8Sum8[0], nb)
}

func dotF32(row []byte, x []float32) float32 {
	n := len(x)
	m := n &^ 31
	if !useAVX2 || m == 0 {
		return dotF32Generic(row, x)
	}
	_ = row[4*n-1]
	s := dotF32AVX2(&row[0], &x[0], m)
	if m < n {
		s += dotF32Generic(row[4*m:], x[m:])
	}
	return s
}

func dotF16(row []byte, x []uint16) float32 {
	n := len(x)
	m := n &^ 15
	if !useAVX2 || m == 0 {
		return dotF16Generic(row, x)
	}
	_ = row[2*n-1]
	s := dotF16AVX2(&row[0], (*byte)(unsafe.Pointer(&x[0])), m)
	if m < n {
		s += dotF16Generic(row[2*m:], x[m:])
	}
	return s
}

// kernelISA names the instruction set of the matrix-vector kernel for weights of type t, ""
// for the pure-Go one.
func kernelISA(t gguf.Type) string {
	if !useAVX2 {
		return ""
	}
	switch t {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_K:
		if useVNNI {
			return "AVX-512 VNNI"
		}
		return "AVX2"
	case gguf.Q4_1, gguf.Q5_0, gguf.Q5_1:
		if legacy512() {
			return "AVX-512 VNNI"
		}
		return "AVX2"
	case gguf.F32, gguf.F16, gguf.BF16, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q6_K, gguf.IQ4_NL, gguf.IQ4_XS:
		return "AVX2"
	}
	return ""
}

// Kernel names the dot-product implementation in use.
func Kernel() string {
	if useVNNI {
		return "avx2+vnni"
	}
	if useAVX2 {
		return "avx2"
	}
	return "go"
}
