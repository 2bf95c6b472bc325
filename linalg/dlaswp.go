package linalg

// Dlaswp applies the row interchanges ipiv[k1..k2] (inclusive, zero-based)
// to the n columns of the column-major matrix A: for each k in order, row k
// is exchanged with row ipiv[k]. With incx == 1 the interchanges run from k1
// to k2 (applying the pivots of Dgetrf); with incx == -1 from k2 down to k1
// (undoing them). Other increments panic, as in gonum. A must have at least
// max(k2, max ipiv)+1 rows within lda.
func Dlaswp(n int, a []float64, lda int, k1, k2 int, ipiv []int, incx int) {
	const r = "Dlaswp"
	checkDim(r, "n", n)
	switch {
	case k1 < 0:
		xerbla(r, "k1 = %d < 0", k1)
	case k2 < k1:
		xerbla(r, "k2 = %d < k1 = %d", k2, k1)
	case len(ipiv) <= k2:
		xerbla(r, "len(ipiv) = %d <= k2 = %d", len(ipiv), k2)
	case incx != 1 && incx != -1:
		xerbla(r, "incx = %d (want 1 or -1)", incx)
	}
	rows := k2 + 1
	for k := k1; k <= k2; k++ {
		if ipiv[k] < 0 || ipiv[k] >= lda {
			xerbla(r, "ipiv[%d] = %d outside [0, lda = %d)", k, ipiv[k], lda)
		}
		rows = max(rows, ipiv[k]+1)
	}
	checkMat(r, "a", rows, n, a, lda)
	if n == 0 {
		return
	}
	// Column blocks keep the touched rows of a few columns in cache while
	// all the interchanges are applied, as LAPACK's dlaswp does.
	const nb = laswpBlock
	for j0 := 0; j0 < n; j0 += nb {
		j1 := min(j0+nb, n)
		if incx == 1 {
			for k := k1; k <= k2; k++ {
				if p := ipiv[k]; p != k {
					for j := j0; j < j1; j++ {
						c := a[j*lda:]
						c[k], c[p] = c[p], c[k]
					}
				}
			}
		} else {
			for k := k2; k >= k1; k-- {
				if p := ipiv[k]; p != k {
					for j := j0; j < j1; j++ {
						c := a[j*lda:]
						c[k], c[p] = c[p], c[k]
					}
				}
			}
		}
	}
}

// laswpBlock is the number of columns Dlaswp handles together: fewer than
// LAPACK's 32, whose rows span too many pages at a large lda.
const laswpBlock = 8
