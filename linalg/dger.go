package linalg

// Dger computes the rank-one update A = alpha*x*yᵀ + A, where A is an m×n
// column-major matrix, x has m elements and y has n.
func Dger(m, n int, alpha float64, x []float64, incx int, y []float64, incy int, a []float64, lda int) {
	checkDim("Dger", "m", m)
	checkDim("Dger", "n", n)
	checkVec("Dger", "x", m, x, incx)
	checkVec("Dger", "y", n, y, incy)
	checkMat("Dger", "a", m, n, a, lda)
	if m == 0 || n == 0 || alpha == 0 {
		return
	}
	iy := vecStart(n, incy)
	if incx == 1 {
		x = x[:m]
		for j := range n {
			if t := alpha * y[iy]; t != 0 {
				axpyUnit(t, x, a[j*lda:j*lda+m])
			}
			iy += incy
		}
		return
	}
	ix0 := vecStart(m, incx)
	for j := range n {
		if t := alpha * y[iy]; t != 0 {
			col := a[j*lda : j*lda+m]
			for i, ix := 0, ix0; i < m; i, ix = i+1, ix+incx {
				col[i] += t * x[ix]
			}
		}
		iy += incy
	}
}
