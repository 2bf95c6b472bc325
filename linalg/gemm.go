package linalg

// gemm is Dgemm after argument checks and quick returns.
func gemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemmSimple(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
