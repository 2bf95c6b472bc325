package linalg

// Dgetrs solves A*X = B (t == NoTrans) or Aᵀ*X = B (t == Trans) for X,
// using the LU factorisation of the n×n matrix A computed by Dgetrf (a and
// ipiv as Dgetrf left them). B is n×nrhs, column-major with leading dimension
// ldb, and is overwritten by X. A must be non-singular (Dgetrf's info == 0);
// otherwise the result contains Inf or NaN.
func Dgetrs(t Transpose, n, nrhs int, a []float64, lda int, ipiv []int, b []float64, ldb int) {
	const r = "Dgetrs"
	checkTrans(r, "t", t)
	checkDim(r, "n", n)
	checkDim(r, "nrhs", nrhs)
	checkMat(r, "a", n, n, a, lda)
	checkMat(r, "b", n, nrhs, b, ldb)
	if len(ipiv) < n {
		xerbla(r, "len(ipiv) = %d < n = %d", len(ipiv), n)
	}
	for i, p := range ipiv[:n] {
		if p < i || p >= n {
			xerbla(r, "ipiv[%d] = %d outside [%d, n = %d): not from Dgetrf", i, p, i, n)
		}
	}
	if n == 0 || nrhs == 0 {
		return
	}
	getrsBackend(t == Trans, n, nrhs, a, lda, ipiv, b, ldb)
}

// getrs is Dgetrs after argument checks, in Go; n, nrhs > 0.
func getrs(trans bool, n, nrhs int, a []float64, lda int, ipiv []int, b []float64, ldb int) {
	if !trans {
		// A = P L U: X = U⁻¹ L⁻¹ Pᵀ B.
		laswpFwd(nrhs, b, ldb, 0, n-1, ipiv)
		trsmPar(maxThreads(), true, false, false, true, n, nrhs, 1, a, lda, b, ldb)
		trsmPar(maxThreads(), true, true, false, false, n, nrhs, 1, a, lda, b, ldb)
		return
	}
	// Aᵀ = Uᵀ Lᵀ Pᵀ: X = P L⁻ᵀ U⁻ᵀ B.
	trsmPar(maxThreads(), true, true, true, false, n, nrhs, 1, a, lda, b, ldb)
	trsmPar(maxThreads(), true, false, true, true, n, nrhs, 1, a, lda, b, ldb)
	for k := n - 1; k >= 0; k-- {
		if p := ipiv[k]; p != k {
			Dswap(nrhs, b[k:], ldb, b[p:], ldb)
		}
	}
}
