package linalg

// Daxpy computes y = alpha*x + y for n-element vectors x and y.
func Daxpy(n int, alpha float64, x []float64, incx int, y []float64, incy int) {
	checkDim("Daxpy", "n", n)
	checkVec("Daxpy", "x", n, x, incx)
	checkVec("Daxpy", "y", n, y, incy)
	if n == 0 || alpha == 0 {
		return
	}
	if incx == 1 && incy == 1 {
		axpyUnit(alpha, x[:n], y[:n])
		return
	}
	ix, iy := vecStart(n, incx), vecStart(n, incy)
	for range n {
		y[iy] += alpha * x[ix]
		ix += incx
		iy += incy
	}
}

// axpyUnit computes y += alpha*x for len(x) == len(y).
func axpyUnit(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}
