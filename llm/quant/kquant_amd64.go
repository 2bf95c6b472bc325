//go:build amd64 && !noasm

package quant

import (
	"unsafe"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// The assembly reads BlockQ8K at fixed offsets (kquant_amd64.s): D at 0, Qs at 4, Bsums at
// 260, 292 bytes each; these fail to compile if the layout changes.
var (
	_ = [1]int{}[unsafe.Offsetof(BlockQ8K{}.Qs)-4]
	_ = [1]int{}[unsafe.Offsetof(BlockQ8K{}.Bsums)-260]
	_ = [1]int{}[unsafe.Sizeof(BlockQ8K{})-292]
)

//go:noescape
func dotQ4_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ5_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

// dotQ5_KRowsVNNI is dotQ5_KRowsAVX2 in AVX-512 VL/VNNI instructions (useVNNI).
//
//go:noescape
func dotQ5_KRowsVNNI(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ6_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ3_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ2_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ4_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ5_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)

// dotQ5_KRows2VNNI is dotQ5_KRows2AVX2 in AVX-512 VL/VNNI instructions (useVNNI).
//
//go:noescape
func dotQ5_KRows2VNNI(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ6_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func quantizeQ8_KAVX2(x *float32, y *BlockQ8K, nb int)

// quantizeQ8_K fills y from len(y) blocks of x (quantizeQ8_KBlock each).
func quantizeQ8_K(x []float32, y []BlockQ8K) {
	if !useAVX2 || len(y) == 0 {
		quantizeQ8_KGeneric(x, y)
		return
	}
	_ = x[len(y)*QK_K-1]
	quantizeQ8_KAVX2(&x[0], &y[0], len(y))
}

type kRowsKernel func(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

// kDot runs a row kernel on one row of v.N elements, or reports false where it cannot.
func kDot(k kRowsKernel, blockBytes int, row []byte, v *Vec) (float32, bool) {
	nb := len(v.K)
	if !useAVX2 || nb == 0 || v.N != nb*QK_K {
		return 0, false
	}
	_ = row[nb*blockBytes-1] // the kernel reads nb blocks
	var y float32
	k(&row[0], 0, &v.K[0], nb, 1, &y)
	return y, true
}

// kRows computes y[lo:hi] for m's rows with a row kernel, or reports false where it cannot.
func kRows(k kRowsKernel, blockBytes int, m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := len(v.K)
	if !useAVX2 || nb == 0 || hi <= lo || v.N != m.Cols || v.N != nb*QK_K || m.RowBytes < nb*blockBytes {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_ = y[lo:hi]
	k(&rows[0], m.RowBytes, &v.K[0], nb, hi-lo, &y[lo])
	return true
}

func dotQ2_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ2_KRowsAVX2, BlockQ2_K, row, v); ok {
		return s
	}
	return dotQ2_K(row, v)
}

func rowsQ2_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ2_KRowsAVX2, BlockQ2_K, m, v, y, lo, hi)
}

func dotQ3_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ3_KRowsAVX2, BlockQ3_K, row, v); ok {
		return s
	}
	return dotQ3_K(row, v)
}

func rowsQ3_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ3_KRowsAVX2, BlockQ3_K, m, v, y, lo, hi)
}

func dotQ4_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ4_KRowsAVX2, BlockQ4_K, row, v); ok {
		return s
	}
	return dotQ4_K(row, v)
}

func rowsQ4_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ4_KRowsAVX2, BlockQ4_K, m, v, y, lo, hi)
}

// q5kRows is the Q5_K row kernel this CPU runs best.
func q5kRows() kRowsKernel {
	if useVNNI {
		return dotQ5_KRowsVNNI
	}
	return dotQ5_KRowsAVX2
}

func dotQ5_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(q5kRows(), BlockQ5_K, row, v); ok {
		return s
	}
	return dotQ5_K(row, v)
}

func rowsQ5_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(q5kRows(), BlockQ5_K, m, v, y, lo, hi)
}

func dotQ6_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ6_KRowsAVX2, BlockQ6_K, row, v); ok {
		return s
	}
	return dotQ6_K(row, v)
}

func rowsQ6_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ6_KRowsAVX2, BlockQ6_K, m, v, y, lo, hi)
}

//go:noescape
func dotIQ4_XSRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotIQ4_XSRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)

//go:noescape
func matVecIQ4_NLAVX2(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)

func dotIQ4_XSVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotIQ4_XSRowsAVX2, BlockIQ4_XS, row, v); ok {
		return s
	}
	return dotIQ4_XS(row, v)
}

func rowsIQ4_XS(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotIQ4_XSRowsAVX2, BlockIQ4_XS, m, v, y, lo, hi)
}

// iq4nlRows computes y[lo:hi] for m's IQ4_NL rows with the assembly kernel, or reports false
// where it cannot.
func iq4nlRows(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := v.N / QK8_0
	if !useAVX2 || nb == 0 || hi <= lo || v.N != m.Cols || len(v.D) < nb || len(v.Q8) < nb*BlockQ8_0 || m.RowBytes < nb*BlockIQ4_NL {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_ = y[lo:hi]
	matVecIQ4_NLAVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, &y[lo])
	return true
}

func dotIQ4_NLVec(row []byte, v *Vec) float32 {
	nb := v.N / QK8_0
	if nb > 0 && len(row) >= nb*BlockIQ4_NL {
		var y [1]float32
		m := Matrix{Type: gguf.IQ4_NL, Rows: 1, Cols: v.N, RowBytes: nb * BlockIQ4_NL, Data: row[:nb*BlockIQ4_NL]}
		if iq4nlRows(&m, v, y[:], 0, 1) {
			return y[0]
		}
	}
	return dotIQ4_NL(row, v)
}

// kRowsN computes ys[k][lo:hi] for m's rows against the first vectors of xs, eight or four
// at a time in one pass over the weights where such kernels exist for m's type, and returns
// how many vectors it did (0 where none).
func kRowsN(m *Matrix, xs []Vec, ys [][]float32, lo, hi int) int {
	t := 0
	for t+8 <= len(xs) && legacyRows8(m, xs[t:t+8], ys[t:t+8], lo, hi) {
		t += 8
	}
	for t+4 <= len(xs) && legacyRows4(m, xs[t:t+4], ys[t:t+4], lo, hi) {
		t += 4
	}
	return t
}

// kRows2 computes ya[lo:hi] and yb[lo:hi] for m's rows against two vectors in one pass over
// the weights, where a two-vector kernel exists for m's type, or reports false.
func kRows2(m *Matrix, a, b *Vec, ya, yb []float32, lo, hi int) bool {
	var bs int
	switch m.Type {
	case gguf.Q4_1, gguf.Q5_0, gguf.Q5_1:
		return legacyRows2(m, a, b, ya, yb, lo, hi)
	case gguf.Q4_K:
		bs = BlockQ4_K
	case gguf.Q5_K:
		bs = BlockQ5_K
	case gguf.Q6_K:
		bs = BlockQ6_K
	case gguf.IQ4_XS:
		bs = BlockIQ4_XS
	default:
		return false
	}
	nb := len(a.K)
	if !useAVX2 || nb == 0 || hi <= lo || len(b.K) != nb || a.N != m.Cols || b.N != m.Cols || a.N != nb*QK_K || m.RowBytes < nb*bs {
		return false
	}
	_, _ = ya[lo:hi], yb[lo:hi]
	var out [2 * 16]float32 // on the stack: the kernels are called directly (noescape)
	for r0 := lo; r0 < hi; r0 += 16 {
		n := min(16, hi-r0)
		w := &m.Data[r0*m.RowBytes : (r0+n)*m.RowBytes][0]
		switch m.Type {
		case gguf.Q4_K:
			dotQ4_KRows2AVX2(w, m.RowBytes, &a.K[0], &b.K[0], nb, n, &out[0])
		case gguf.Q5_K:
			if useVNNI {
				dotQ5_KRows2VNNI(w, m.RowBytes, &a.K[0], &b.K[0], nb, n, &out[0])
			} else {
				dotQ5_KRows2AVX2(w, m.RowBytes, &a.K[0], &b.K[0], nb, n, &out[0])
			}
		case gguf.IQ4_XS:
			dotIQ4_XSRows2AVX2(w, m.RowBytes, &a.K[0], &b.K[0], nb, n, &out[0])
		default:
			dotQ6_KRows2AVX2(w, m.RowBytes, &a.K[0], &b.K[0], nb, n, &out[0])
		}
		for i := 0; i < n; i++ {
			ya[r0+i], yb[r0+i] = out[2*i], out[2*i+1]
		}
	}
	return true
}
