package linalg

// A packed left operand, for a matrix that is the A of many Dgemm calls: HPL's L panel is
// the A of every trailing update of its step, on every process of its process row. Dgemm
// packs A into the micro-kernel's layout on each call; PackA does it once, and the process
// that factors the panel can broadcast it packed, so that no receiver packs it again.
//
// The layout is the kernel's: micro-panels of PackedALayout() rows, each holding, for every
// column l of A in turn, those rows' elements of column l, the last micro-panel padded with
// zeros. It depends on the CPU (24 rows for AVX-512, 8 for AVX2): processes that exchange
// packed matrices must first agree that their layouts are equal.

// PackedALayout identifies the layout PackA writes: the micro-panel height, or 0 where
// Dgemm cannot take a packed operand (the openblas backend).
func PackedALayout() int {
	if !goBackend {
		return 0
	}
	return kern.mr
}

// PackedALen returns the number of elements PackA writes for an m×k matrix, or -1 when
// DgemmPackedA cannot take one of k columns: the openblas backend, or k deeper than one
// cache block of the kernel (the kc of Dgemm's blocking).
func PackedALen(m, k int) int {
	if !goBackend || m < 0 || k < 0 || k > kern.kc {
		return -1
	}
	return roundUp(m, kern.mr) * k
}

// PackA packs the m×k column-major matrix a (leading dimension lda) into dst, which must
// hold PackedALen(m, k) elements.
func PackA(m, k int, a []float64, lda int, dst []float64) {
	const r = "PackA"
	checkDim(r, "m", m)
	checkDim(r, "k", k)
	checkMat(r, "a", m, k, a, lda)
	need := PackedALen(m, k)
	if need < 0 {
		xerbla(r, "cannot pack %d columns (PackedALen is -1)", k)
	}
	if len(dst) < need {
		xerbla(r, "len(dst) = %d < %d for a %d×%d matrix", len(dst), need, m, k)
	}
	if m == 0 || k == 0 {
		return
	}
	packA(false, kern.mr, m, k, a, lda, 0, 0, dst)
}

// DgemmPackedA computes C = alpha*A*op(B) + beta*C as Dgemm does, where A (m×k) is given
// packed by PackA in this process.
func DgemmPackedA(tB Transpose, m, n, k int, alpha float64, pa []float64, b []float64, ldb int, beta float64, c []float64, ldc int) {
	const r = "DgemmPackedA"
	checkTrans(r, "tB", tB)
	checkDim(r, "m", m)
	checkDim(r, "n", n)
	checkDim(r, "k", k)
	need := PackedALen(m, k)
	if need < 0 {
		xerbla(r, "no packed operand of %d columns (PackedALen is -1)", k)
	}
	if len(pa) < need {
		xerbla(r, "len(pa) = %d < %d for a packed %d×%d matrix", len(pa), need, m, k)
	}
	br, bc := k, n
	if tB == Trans {
		br, bc = n, k
	}
	checkMat(r, "b", br, bc, b, ldb)
	checkMat(r, "c", m, n, c, ldc)
	if m == 0 || n == 0 || ((alpha == 0 || k == 0) && beta == 1) {
		return
	}
	scaleC(m, n, beta, c, ldc)
	if alpha == 0 || k == 0 {
		return
	}
	threads := 1
	if m*n*k >= parallelFlops {
		threads = maxThreads()
	}
	gemmPackedA(kern, threads, tB == Trans, m, n, k, alpha, pa, b, ldb, c, ldc)
}
