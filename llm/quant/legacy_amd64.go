//go:build amd64 && !noasm

package quant

//go:noescape
func rowsQ5_0AVX2(w *byte, stride int, x *byte, xd *float32, sum8 *int32, nb, rows int, out *float32)

//go:noescape
func rowsQ5_1AVX2(w *byte, stride int, x *byte, xd *float32, s *float32, nb, rows int, out *float32)

//go:noescape
func rowsQ4_1AVX2(w *byte, stride int, x *byte, xd *float32, s *float32, nb, rows int, out *float32)

// legacyRowsOK reports whether the legacy row kernels can run y[lo:hi] of m against v: AVX2, a
// vector of m.Cols elements in whole blocks with its scales (and sums) converted, rows of nb
// blocks of bs bytes.
func legacyRowsOK(m *Matrix, v *Vec, lo, hi, bs int) bool {
	nb := v.N / QK8_0
	return useAVX2 && nb > 0 && hi > lo && v.N == m.Cols && v.N == nb*QK8_0 && m.RowBytes >= nb*bs &&
		len(v.Q8) >= nb*BlockQ8_0 && len(v.D) >= nb
}

// rowsQ5_0 computes y[lo:hi] for m's Q5_0 rows with the AVX2 kernel (dotQ5_0 bit for bit), or
// reports false where it cannot.
func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	if !legacyRowsOK(m, v, lo, hi, BlockQ5_0) || len(v.Q8Sum8) < v.N/QK8_0 {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_ = y[lo:hi]
	rowsQ5_0AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.Q8Sum8[0], v.N/QK8_0, hi-lo, &y[lo])
	return true
}

// rowsQ5_1 is rowsQ5_0 for Q5_1 rows against Q8_1 (dotQ5_1 bit for bit).
func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	if !legacyRowsOK(m, v, lo, hi, BlockQ5_1) || len(v.S) < v.N/QK8_0 {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes]
	_ = y[lo:hi]
	rowsQ5_1AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.S[0], v.N/QK8_0, hi-lo, &y[lo])
	return true
}

// rowsQ4_1 is rowsQ5_0 for Q4_1 rows against Q8_1 (dotQ4_1 bit for bit).
func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	if !legacyRowsOK(m, v, lo, hi, BlockQ4_1) || len(v.S) < v.N/QK8_0 {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes]
	_ = y[lo:hi]
	rowsQ4_1AVX2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.S[0], v.N/QK8_0, hi-lo, &y[lo])
	return true
}
