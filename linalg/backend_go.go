//go:build !openblas || !cgo

package linalg

// The default backend: everything in Go and Go assembly, no cgo.

// goBackend: Dgemm and Dtrsm run on the Go kernels, with their packing buffers (so
// DgemmPackedA and Reserve apply).
const goBackend = true

func gemmBackend(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm(maxThreads(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trsmBackend(left, upper, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trsmPar(maxThreads(), left, upper, trans, unit, m, n, alpha, a, lda, b, ldb)
}

func getrfBackend(m, n int, a []float64, lda int, ipiv []int) int {
	return getrf(m, n, a, lda, ipiv)
}

func getrsBackend(trans bool, n, nrhs int, a []float64, lda int, ipiv []int, b []float64, ldb int) {
	getrs(trans, n, nrhs, a, lda, ipiv, b, ldb)
}

// backendSetThreads has nothing to do here: the Go routines read the limit
// that SetThreads stores.
func backendSetThreads(int) {}
