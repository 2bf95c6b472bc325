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
	if axpyAsm != nil && len(x) >= level1AsmMin {
		axpyAsm(len(x), alpha, &x[0], &y[0])
		return
	}
	for i, v := range x {
		y[i] += alpha * v
	}
}

// Assembly for unit-stride level-1 loops, where the CPU has it (nil otherwise): axpyAsm is
// y += alpha*x, scalAsm x *= alpha, maxAbsAsm the largest |x[i]| (NaNs skipped) and
// findAbsAsm the first i with |x[i]| == v (n if none). Vectors shorter than level1AsmMin
// stay in Go, where a call costs more than the loop.
var (
	axpyAsm    func(n int, alpha float64, x, y *float64)
	scalAsm    func(n int, alpha float64, x *float64)
	maxAbsAsm  func(n int, x *float64) float64
	findAbsAsm func(n int, x *float64, v float64) int
)

const level1AsmMin = 16
