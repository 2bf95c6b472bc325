//go:build arm64 && !noasm

package quant

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useDotprod selects the SDOT forms of the NEON kernels (the ARMv8.2 dot product extension,
// detected at run time); without it they take the baseline NEON path.
var useDotprod = cpu.ARM64.HasASIMDDP

// The assembly reads BlockQ8K at fixed offsets (kquant_arm64.s): D at 0, Qs at 4, Bsums at
// 260, 292 bytes each; these fail to compile if the layout changes.
var (
	_ = [1]int{}[unsafe.Offsetof(BlockQ8K{}.Qs)-4]
	_ = [1]int{}[unsafe.Offsetof(BlockQ8K{}.Bsums)-260]
	_ = [1]int{}[unsafe.Sizeof(BlockQ8K{})-292]
)

//go:noescape
func dotQ2_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ3_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ4_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ5_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ6_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

//go:noescape
func dotIQ4_XSRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

func quantizeQ8_K(x []float32, y []BlockQ8K) { quantizeQ8_KGeneric(x, y) }

type kRowsKernel func(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)

// kDot runs a row kernel on one row of v.N elements, or reports false where it cannot.
func kDot(k kRowsKernel, blockBytes int, row []byte, v *Vec) (float32, bool) {
	nb := len(v.K)
	if nb == 0 || v.N != nb*QK_K {
		return 0, false
	}
	_ = row[nb*blockBytes-1] // the kernel reads nb blocks
	var y float32
	k(&row[0], 0, &v.K[0], nb, 1, &y, useDotprod)
	return y, true
}

// kRows computes y[lo:hi] for m's rows with a row kernel, or reports false where it cannot.
func kRows(k kRowsKernel, blockBytes int, m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := len(v.K)
	if nb == 0 || hi <= lo || v.N != m.Cols || v.N != nb*QK_K || m.RowBytes < nb*blockBytes {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_ = y[lo:hi]
	k(&rows[0], m.RowBytes, &v.K[0], nb, hi-lo, &y[lo], useDotprod)
	return true
}

func dotQ4_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ4_KRowsNEON, BlockQ4_K, row, v); ok {
		return s
	}
	return dotQ4_K(row, v)
}

func rowsQ4_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ4_KRowsNEON, BlockQ4_K, m, v, y, lo, hi)
}

func dotQ5_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ5_KRowsNEON, BlockQ5_K, row, v); ok {
		return s
	}
	return dotQ5_K(row, v)
}

func rowsQ5_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ5_KRowsNEON, BlockQ5_K, m, v, y, lo, hi)
}

func dotQ6_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ6_KRowsNEON, BlockQ6_K, row, v); ok {
		return s
	}
	return dotQ6_K(row, v)
}

func rowsQ6_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ6_KRowsNEON, BlockQ6_K, m, v, y, lo, hi)
}

func dotIQ4_XSVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotIQ4_XSRowsNEON, BlockIQ4_XS, row, v); ok {
		return s
	}
	return dotIQ4_XS(row, v)
}

func rowsIQ4_XS(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotIQ4_XSRowsNEON, BlockIQ4_XS, m, v, y, lo, hi)
}

func dotQ2_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ2_KRowsNEON, BlockQ2_K, row, v); ok {
		return s
	}
	return dotQ2_K(row, v)
}

func rowsQ2_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ2_KRowsNEON, BlockQ2_K, m, v, y, lo, hi)
}

func dotQ3_KVec(row []byte, v *Vec) float32 {
	if s, ok := kDot(dotQ3_KRowsNEON, BlockQ3_K, row, v); ok {
		return s
	}
	return dotQ3_K(row, v)
}

func rowsQ3_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return kRows(dotQ3_KRowsNEON, BlockQ3_K, m, v, y, lo, hi)
}

// kRowsN: no four- or eight-vector kernels on arm64.
func kRowsN(m *Matrix, xs []Vec, ys [][]float32, lo, hi int) int { return 0 }

// kRows2: no two-vector kernels on arm64; MatMul runs the row kernel per vector.
func kRows2(m *Matrix, a, b *Vec, ya, yb []float32, lo, hi int) bool { return false }
