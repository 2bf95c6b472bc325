package linalg

// Dgemm computes C = alpha*op(A)*op(B) + beta*C, where op(X) is X or Xᵀ as
// tA and tB say, op(A) is m×k, op(B) is k×n and C is m×n, all column-major.
// A is stored m×k (NoTrans) or k×m (Trans) with leading dimension lda, and B
// k×n or n×k with ldb. When beta == 0, C need not be initialised (NaNs in C
// are not propagated), as in reference BLAS.
func Dgemm(tA, tB Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	const r = "Dgemm"
	checkTrans(r, "tA", tA)
	checkTrans(r, "tB", tB)
	checkDim(r, "m", m)
	checkDim(r, "n", n)
	checkDim(r, "k", k)
	ar, ac := m, k
	if tA == Trans {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	checkMat(r, "a", ar, ac, a, lda)
	checkMat(r, "b", br, bc, b, ldb)
	checkMat(r, "c", m, n, c, ldc)
	if m == 0 || n == 0 || ((alpha == 0 || k == 0) && beta == 1) {
		return
	}
	if alpha == 0 || k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	gemmBackend(tA == Trans, tB == Trans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// scaleC computes C = beta*C, writing zeros when beta == 0.
func scaleC(m, n int, beta float64, c []float64, ldc int) {
	if beta == 1 {
		return
	}
	for j := range n {
		col := c[j*ldc : j*ldc+m]
		if beta == 0 {
			clear(col)
			continue
		}
		for i := range col {
			col[i] *= beta
		}
	}
}
