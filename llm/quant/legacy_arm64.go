//go:build !noasm

package quant

// q5Bits: TBL indices spreading bytes 0, 1 of a Q5_0/Q5_1 block's qh (the fifth bits of
// elements 0..15) and bytes 2, 3 (16..31) over 8 lanes each, then the bit each lane tests
// (legacy_arm64.s).
var q5Bits = [48]byte{
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
	1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
}

//go:noescape
func dotQ5_0RowsNEON(w *byte, stride int, x *byte, d *float32, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ5_1RowsNEON(w *byte, stride int, x *byte, d, s *float32, nb, rows int, out *float32, dp bool)

//go:noescape
func dotQ4_1RowsNEON(w *byte, stride int, x *byte, d, s *float32, nb, rows int, out *float32, dp bool)

// legacyBlocks is the number of blocks of 32 per row when the kernels can compute y[lo:hi]
// for m's rows (blocks of blockBytes bytes) with v (its block sums too where sums is set),
// else 0.
func legacyBlocks(m *Matrix, v *Vec, y []float32, lo, hi, blockBytes int, sums bool) int {
	nb := v.N / QK8_0
	if nb == 0 || hi <= lo || hi > m.Rows || hi > len(y) || v.N != m.Cols || v.N != nb*QK8_0 ||
		len(v.Q8) < nb*BlockQ8_0 || len(v.D) < nb || (sums && len(v.S) < nb) ||
		m.RowBytes < nb*blockBytes || len(m.Data) < hi*m.RowBytes {
		return 0
	}
	return nb
}

func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := legacyBlocks(m, v, y, lo, hi, BlockQ5_0, false)
	if nb == 0 {
		return false
	}
	dotQ5_0RowsNEON(&m.Data[lo*m.RowBytes], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, &y[lo], useDotprod)
	return true
}

func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := legacyBlocks(m, v, y, lo, hi, BlockQ5_1, true)
	if nb == 0 {
		return false
	}
	dotQ5_1RowsNEON(&m.Data[lo*m.RowBytes], m.RowBytes, &v.Q8[0], &v.D[0], &v.S[0], nb, hi-lo, &y[lo], useDotprod)
	return true
}

func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := legacyBlocks(m, v, y, lo, hi, BlockQ4_1, true)
	if nb == 0 {
		return false
	}
	dotQ4_1RowsNEON(&m.Data[lo*m.RowBytes], m.RowBytes, &v.Q8[0], &v.D[0], &v.S[0], nb, hi-lo, &y[lo], useDotprod)
	return true
}
