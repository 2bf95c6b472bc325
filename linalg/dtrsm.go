package linalg

import "sync"

// Dtrsm solves op(A)*X = alpha*B (side == Left) or X*op(A) = alpha*B
// (side == Right) for X, where A is a triangular matrix (the ul triangle of
// its storage is referenced; with d == Unit its diagonal is taken as ones and
// not read) and B is m×n; X overwrites B. A is m×m for Left and n×n for
// Right, column-major with leading dimension lda.
//
// Large problems are solved recursively: the triangle is split in two, the
// halves are solved recursively and the off-diagonal block is applied with
// Dgemm, so the work runs at Dgemm's speed.
func Dtrsm(s Side, ul Uplo, tA Transpose, d Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	const r = "Dtrsm"
	if s != Left && s != Right {
		xerbla(r, "bad side %q (want 'L' or 'R')", byte(s))
	}
	if ul != Upper && ul != Lower {
		xerbla(r, "bad uplo %q (want 'U' or 'L')", byte(ul))
	}
	checkTrans(r, "tA", tA)
	if d != Unit && d != NonUnit {
		xerbla(r, "bad diag %q (want 'N' or 'U')", byte(d))
	}
	checkDim(r, "m", m)
	checkDim(r, "n", n)
	ka := m
	if s == Right {
		ka = n
	}
	checkMat(r, "a", ka, ka, a, lda)
	checkMat(r, "b", m, n, b, ldb)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 {
		scaleC(m, n, 0, b, ldb)
		return
	}
	trsmBackend(s == Left, ul == Upper, tA == Trans, d == Unit, m, n, alpha, a, lda, b, ldb)
}

// trsmPar solves with up to threads goroutines: the columns of B (Left) or
// its rows (Right) are independent problems, so each goroutine solves a
// slice of them on its own, with no synchronisation inside.
func trsmPar(threads int, left, upper, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	ka, other := m, n
	if !left {
		ka, other = n, m
	}
	if threads <= 1 || ka*ka*other < parallelFlops || other < 2*threads*8 {
		trsmRec(threads, left, upper, trans, unit, m, n, alpha, a, lda, b, ldb)
		return
	}
	var wg sync.WaitGroup
	for w := range threads {
		// Slices of B, multiples of 8 (a micro-tile side) where possible.
		lo := roundUp(other*w/threads, 8)
		hi := min(roundUp(other*(w+1)/threads, 8), other)
		if w == threads-1 {
			hi = other
		}
		if lo >= hi {
			continue
		}
		wg.Go(func() {
			if left {
				trsmRec(1, left, upper, trans, unit, m, hi-lo, alpha, a, lda, b[lo*ldb:], ldb)
			} else {
				trsmRec(1, left, upper, trans, unit, hi-lo, n, alpha, a, lda, b[lo:], ldb)
			}
		})
	}
	wg.Wait()
}

// trsmLeaf is the size of triangle below which trsmRec solves directly.
const trsmLeaf = 16

// trsmRec solves recursively by halving the triangle (see Dtrsm).
func trsmRec(th int, left, upper, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	ka := m
	if !left {
		ka = n
	}
	// op(A) lower on the left (HPL's and LU's solve): the kernel-based
	// solver, once the triangle is small enough to stay in cache.
	if left && upper == trans && ka <= trsmKernMax && n >= kern.nr {
		trsmKernLower(kern, trans, unit, m, n, alpha, a, lda, b, ldb)
		return
	}
	if ka <= trsmLeaf {
		trsmUnblocked(left, upper, trans, unit, m, n, alpha, a, lda, b, ldb)
		return
	}
	// Split the triangle at k1, a multiple of the leaf size, so that the
	// blocks Dgemm sees are reasonably shaped.
	k1 := (ka / 2 / trsmLeaf) * trsmLeaf
	k1 = max(k1, trsmLeaf)
	k2 := ka - k1
	a11 := a
	a22 := a[k1+k1*lda:]
	a21 := a[k1:]     // k2×k1, below the diagonal
	a12 := a[k1*lda:] // k1×k2, right of the diagonal
	// opLower: op(A) is lower triangular.
	opLower := upper == trans
	if left {
		b1, b2 := b, b[k1:]
		if opLower {
			// [O11 0; O21 O22] [X1; X2] = alpha [B1; B2]
			trsmRec(th, left, upper, trans, unit, k1, n, alpha, a11, lda, b1, ldb)
			if trans { // O21 = A12ᵀ
				gemm(th, true, false, k2, n, k1, -1, a12, lda, b1, ldb, alpha, b2, ldb)
			} else { // O21 = A21
				gemm(th, false, false, k2, n, k1, -1, a21, lda, b1, ldb, alpha, b2, ldb)
			}
			trsmRec(th, left, upper, trans, unit, k2, n, 1, a22, lda, b2, ldb)
			return
		}
		// [O11 O12; 0 O22] [X1; X2] = alpha [B1; B2]
		trsmRec(th, left, upper, trans, unit, k2, n, alpha, a22, lda, b2, ldb)
		if trans { // O12 = A21ᵀ
			gemm(th, true, false, k1, n, k2, -1, a21, lda, b2, ldb, alpha, b1, ldb)
		} else { // O12 = A12
			gemm(th, false, false, k1, n, k2, -1, a12, lda, b2, ldb, alpha, b1, ldb)
		}
		trsmRec(th, left, upper, trans, unit, k1, n, 1, a11, lda, b1, ldb)
		return
	}
	b1, b2 := b, b[k1*ldb:]
	if !opLower {
		// [X1 X2] [O11 O12; 0 O22] = alpha [B1 B2]
		trsmRec(th, left, upper, trans, unit, m, k1, alpha, a11, lda, b1, ldb)
		if trans { // O12 = A21ᵀ
			gemm(th, false, true, m, k2, k1, -1, b1, ldb, a21, lda, alpha, b2, ldb)
		} else { // O12 = A12
			gemm(th, false, false, m, k2, k1, -1, b1, ldb, a12, lda, alpha, b2, ldb)
		}
		trsmRec(th, left, upper, trans, unit, m, k2, 1, a22, lda, b2, ldb)
		return
	}
	// [X1 X2] [O11 0; O21 O22] = alpha [B1 B2]
	trsmRec(th, left, upper, trans, unit, m, k2, alpha, a22, lda, b2, ldb)
	if trans { // O21 = A12ᵀ
		gemm(th, false, true, m, k1, k2, -1, b2, ldb, a12, lda, alpha, b1, ldb)
	} else { // O21 = A21
		gemm(th, false, false, m, k1, k2, -1, b2, ldb, a21, lda, alpha, b1, ldb)
	}
	trsmRec(th, left, upper, trans, unit, m, k1, 1, a11, lda, b1, ldb)
}

// trsmUnblocked is reference BLAS's DTRSM loop nest, column-oriented so the
// inner loops run down contiguous columns.
func trsmUnblocked(left, upper, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	scale := func(col []float64, s float64) {
		if s != 1 {
			for i := range col {
				col[i] *= s
			}
		}
	}
	if left && !trans {
		// Four columns of B at a time: each element of A is loaded once
		// for four updates, which matters at the leaf sizes used here.
		j := 0
		for ; j+4 <= n; j += 4 {
			trsmLeftNoTrans4(upper, unit, m, alpha, a, lda, b[j*ldb:], ldb)
		}
		if j == n {
			return
		}
		b = b[j*ldb:]
		n -= j
	}
	if left {
		for j := range n {
			bj := b[j*ldb : j*ldb+m]
			switch {
			case !trans && upper:
				scale(bj, alpha)
				for k := m - 1; k >= 0; k-- {
					if bj[k] == 0 {
						continue
					}
					if !unit {
						bj[k] /= a[k+k*lda]
					}
					axpyUnit(-bj[k], a[k*lda:k*lda+k], bj[:k])
				}
			case !trans && !upper:
				scale(bj, alpha)
				for k := range m {
					if bj[k] == 0 {
						continue
					}
					if !unit {
						bj[k] /= a[k+k*lda]
					}
					axpyUnit(-bj[k], a[k+1+k*lda:m+k*lda], bj[k+1:])
				}
			case trans && upper:
				for i := range m {
					ai := a[i*lda : i*lda+i]
					t := alpha * bj[i]
					for k, v := range ai {
						t -= v * bj[k]
					}
					if !unit {
						t /= a[i+i*lda]
					}
					bj[i] = t
				}
			default: // trans && lower
				for i := m - 1; i >= 0; i-- {
					ai := a[i+1+i*lda : m+i*lda]
					t := alpha * bj[i]
					for k, v := range ai {
						t -= v * bj[i+1+k]
					}
					if !unit {
						t /= a[i+i*lda]
					}
					bj[i] = t
				}
			}
		}
		return
	}
	col := func(j int) []float64 { return b[j*ldb : j*ldb+m] }
	switch {
	case !trans && upper:
		for j := range n {
			bj := col(j)
			scale(bj, alpha)
			for k := range j {
				if t := a[k+j*lda]; t != 0 {
					axpyUnit(-t, col(k), bj)
				}
			}
			if !unit {
				scale(bj, 1/a[j+j*lda])
			}
		}
	case !trans && !upper:
		for j := n - 1; j >= 0; j-- {
			bj := col(j)
			scale(bj, alpha)
			for k := j + 1; k < n; k++ {
				if t := a[k+j*lda]; t != 0 {
					axpyUnit(-t, col(k), bj)
				}
			}
			if !unit {
				scale(bj, 1/a[j+j*lda])
			}
		}
	case trans && upper:
		for k := n - 1; k >= 0; k-- {
			bk := col(k)
			if !unit {
				scale(bk, 1/a[k+k*lda])
			}
			for j := range k {
				if t := a[j+k*lda]; t != 0 {
					axpyUnit(-t, bk, col(j))
				}
			}
			scale(bk, alpha)
		}
	default: // trans && lower
		for k := range n {
			bk := col(k)
			if !unit {
				scale(bk, 1/a[k+k*lda])
			}
			for j := k + 1; j < n; j++ {
				if t := a[j+k*lda]; t != 0 {
					axpyUnit(-t, bk, col(j))
				}
			}
			scale(bk, alpha)
		}
	}
}

// trsmLeftNoTrans4 solves A*X = alpha*B for four columns of B, A upper or
// lower triangular (not transposed), by column-oriented substitution.
func trsmLeftNoTrans4(upper, unit bool, m int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	b0 := b[0*ldb : 0*ldb+m]
	b1 := b[1*ldb : 1*ldb+m]
	b2 := b[2*ldb : 2*ldb+m]
	b3 := b[3*ldb : 3*ldb+m]
	if alpha != 1 {
		for i := range m {
			b0[i] *= alpha
			b1[i] *= alpha
			b2[i] *= alpha
			b3[i] *= alpha
		}
	}
	step := func(k, lo, hi int) {
		if !unit {
			d := a[k+k*lda]
			b0[k] /= d
			b1[k] /= d
			b2[k] /= d
			b3[k] /= d
		}
		x0, x1, x2, x3 := b0[k], b1[k], b2[k], b3[k]
		ak := a[lo+k*lda : hi+k*lda]
		c0, c1, c2, c3 := b0[lo:hi], b1[lo:hi], b2[lo:hi], b3[lo:hi]
		for i, v := range ak {
			c0[i] -= x0 * v
			c1[i] -= x1 * v
			c2[i] -= x2 * v
			c3[i] -= x3 * v
		}
	}
	if upper {
		for k := m - 1; k >= 0; k-- {
			step(k, 0, k)
		}
		return
	}
	for k := range m {
		step(k, k+1, m)
	}
}
