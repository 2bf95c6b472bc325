//go:build openblas && cgo

package linalg

// The openblas backend (build tag openblas, needs cgo and Debian's
// libopenblas-dev): Dgemm, Dtrsm, Dgetrf and Dgetrs call the system's
// OpenBLAS after the same argument checks as the Go code; the level-1 and
// level-2 routines stay in Go. For users who prefer OpenBLAS, and for
// side-by-side checks of the Go kernels.

import (
	"math"
	"runtime"

	"github.com/gorun-hpc/gorun/linalg/internal/openblas"
)

// goBackend: OpenBLAS packs its operands itself, in its own buffers, so PackA has nothing to
// hand it and Reserve nothing to ready.
const goBackend = false

// i32 converts a size to the 32-bit integers of OpenBLAS's LP64 interface.
func i32(routine string, v int) int32 {
	if v > math.MaxInt32 {
		xerbla(routine, "size %d exceeds the 32-bit integers of the openblas backend", v)
	}
	return int32(v)
}

func gemmBackend(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	const r = "Dgemm"
	openblas.Dgemm(transA, transB, i32(r, m), i32(r, n), i32(r, k), alpha, a, i32(r, lda), b, i32(r, ldb), beta, c, i32(r, ldc))
}

func trsmBackend(left, upper, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	const r = "Dtrsm"
	openblas.Dtrsm(left, upper, trans, unit, i32(r, m), i32(r, n), alpha, a, i32(r, lda), b, i32(r, ldb))
}

func getrfBackend(m, n int, a []float64, lda int, ipiv []int) int {
	const r = "Dgetrf"
	piv := make([]int32, len(ipiv))
	info := openblas.Dgetrf(i32(r, m), i32(r, n), a, i32(r, lda), piv)
	if info < 0 {
		xerbla(r, "OpenBLAS rejected argument %d", -info)
	}
	for i, p := range piv {
		ipiv[i] = int(p) - 1 // LAPACK's pivots are one-based
	}
	return int(info)
}

func getrsBackend(trans bool, n, nrhs int, a []float64, lda int, ipiv []int, b []float64, ldb int) {
	const r = "Dgetrs"
	piv := make([]int32, n)
	for i, p := range ipiv[:n] {
		piv[i] = int32(p + 1)
	}
	if info := openblas.Dgetrs(trans, i32(r, n), i32(r, nrhs), a, i32(r, lda), piv, b, i32(r, ldb)); info < 0 {
		xerbla(r, "OpenBLAS rejected argument %d", -info)
	}
}

// backendSetThreads passes SetThreads on to OpenBLAS's own thread pool.
func backendSetThreads(n int) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	openblas.SetNumThreads(n)
}
