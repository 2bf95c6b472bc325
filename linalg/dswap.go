package linalg

// Dswap exchanges the n-element vectors x and y.
func Dswap(n int, x []float64, incx int, y []float64, incy int) {
	checkDim("Dswap", "n", n)
	checkVec("Dswap", "x", n, x, incx)
	checkVec("Dswap", "y", n, y, incy)
	if n == 0 {
		return
	}
	if incx == 1 && incy == 1 {
		x, y = x[:n], y[:n]
		for i, v := range x {
			x[i], y[i] = y[i], v
		}
		return
	}
	ix, iy := vecStart(n, incx), vecStart(n, incy)
	for range n {
		x[ix], y[iy] = y[iy], x[ix]
		ix += incx
		iy += incy
	}
}
