package linalg

import "math"

// Idamax returns the zero-based index of the first element of x with the
// largest absolute value. It returns -1 when n == 0 or incx < 0 (as gonum;
// reference BLAS returns its invalid index 0). A NaN is never chosen unless it
// is the first element.
func Idamax(n int, x []float64, incx int) int {
	checkDim("Idamax", "n", n)
	checkVec("Idamax", "x", n, x, incx)
	if n == 0 || incx < 0 {
		return -1
	}
	best, bestAbs := 0, math.Abs(x[0])
	if incx == 1 && maxAbsAsm != nil && n >= level1AsmMin && !math.IsNaN(bestAbs) {
		// The first element of largest magnitude: NaNs after the first never win.
		return findAbsAsm(n, &x[0], maxAbsAsm(n, &x[0]))
	}
	if incx == 1 {
		for i, v := range x[1:n] {
			if a := math.Abs(v); a > bestAbs {
				best, bestAbs = i+1, a
			}
		}
		return best
	}
	for i, ix := 1, incx; i < n; i, ix = i+1, ix+incx {
		if a := math.Abs(x[ix]); a > bestAbs {
			best, bestAbs = i, a
		}
	}
	return best
}
