package linalg

// Dscal computes x = alpha*x for the n-element vector x. incx must be
// positive (reference BLAS ignores non-positive increments; here they are
// an error).
func Dscal(n int, alpha float64, x []float64, incx int) {
	checkDim("Dscal", "n", n)
	if incx <= 0 {
		xerbla("Dscal", "incx = %d <= 0", incx)
	}
	checkVec("Dscal", "x", n, x, incx)
	if n == 0 {
		return
	}
	if incx == 1 {
		x = x[:n]
		if alpha == 0 {
			clear(x) // BLAS semantics: no NaN propagation from x.
			return
		}
		if scalAsm != nil && n >= level1AsmMin {
			scalAsm(n, alpha, &x[0])
			return
		}
		for i := range x {
			x[i] *= alpha
		}
		return
	}
	for i, ix := 0, 0; i < n; i, ix = i+1, ix+incx {
		if alpha == 0 {
			x[ix] = 0
		} else {
			x[ix] *= alpha
		}
	}
}
