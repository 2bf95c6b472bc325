package linalg

import (
	"sync"
	"sync/atomic"
)

// Dgetrf computes the LU factorisation with partial pivoting (row
// interchanges) of the m×n column-major matrix A: A = P*L*U, where L is unit
// lower triangular (lower trapezoidal if m > n) and U upper triangular (upper
// trapezoidal if m < n). L and U overwrite A; the unit diagonal of L is not
// stored. ipiv must have at least min(m, n) elements; ipiv[i] = p (zero-based)
// records that row i was interchanged with row p.
//
// info is 0 on success. info = i > 0 (one-based, LAPACK's meaning) says that
// U[i-1, i-1] is exactly zero: the factorisation was completed, but U is
// singular and must not be used to solve a system.
//
// The factorisation is blocked right-looking, as LAPACK's dgetrf: each panel
// of getrfBlock columns is factored recursively (Toledo's split, as
// LAPACK's dgetrf2), its interchanges are applied to the rest of the matrix
// once, the block row of U is solved with Dtrsm and the trailing matrix is
// updated with one Dgemm of depth getrfBlock, where almost all the time goes.
func Dgetrf(m, n int, a []float64, lda int, ipiv []int) (info int) {
	const r = "Dgetrf"
	checkDim(r, "m", m)
	checkDim(r, "n", n)
	checkMat(r, "a", m, n, a, lda)
	mn := min(m, n)
	if len(ipiv) < mn {
		xerbla(r, "len(ipiv) = %d < min(m, n) = %d", len(ipiv), mn)
	}
	if mn == 0 {
		return 0
	}
	return getrfBackend(m, n, a, lda, ipiv[:mn])
}

// getrf is Dgetrf after argument checks, in Go: len(ipiv) == min(m, n) > 0.
func getrf(m, n int, a []float64, lda int, ipiv []int) (info int) {
	mn := len(ipiv)
	if mn <= 2*getrfBlock {
		return getrfRec(maxThreads(), m, n, a, lda, ipiv)
	}
	return getrfBlocked(maxThreads(), m, n, a, lda, ipiv)
}

// getrfBlock is the panel width of the blocked factorisation: the depth of
// the trailing Dgemm updates, so near the kernels' kc.
const getrfBlock = 256

// getrfBlocked is the blocked right-looking factorisation with a look-ahead
// of one panel: while one goroutine updates the columns of the next panel
// and factors it, the others update the rest of the trailing matrix with
// the current panel, in column chunks handed out dynamically. Each piece of
// work runs single-threaded, so the panel factorisation (the serial part of
// LU) overlaps with the Dgemm updates instead of leaving cores idle.
func getrfBlocked(threads int, m, n int, a []float64, lda int, ipiv []int) (info int) {
	mn := min(m, n)
	nb := getrfBlock
	// panel factors the m-j × jb panel at column j and makes its pivots global.
	panel := func(th, j, jb int) int {
		i := getrfRec(th, m-j, jb, a[j+j*lda:], lda, ipiv[j:j+jb])
		for k := j; k < j+jb; k++ {
			ipiv[k] += j
		}
		if i > 0 {
			return i + j
		}
		return 0
	}
	// update applies panel (j, jb) to columns [c0, c1): interchanges,
	// U12 = L11⁻¹ A12, A22 -= L21 U12.
	update := func(j, jb, c0, c1 int) {
		ac := a[c0*lda:]
		laswpFwd(c1-c0, ac, lda, j, j+jb-1, ipiv)
		ajj := a[j+j*lda:]
		trsmRec(1, true, false, false, true, jb, c1-c0, 1, ajj, lda, ac[j:], lda)
		if j+jb < m {
			gemm(1, false, false, m-j-jb, c1-c0, jb, -1, ajj[jb:], lda, ac[j:], lda, 1, ac[j+jb:], lda)
		}
	}
	info = panel(threads, 0, min(nb, mn))
	type task struct{ c0, c1 int } // c1 < 0: the left interchanges
	var tasks []task
	for j := 0; j < mn; j += nb {
		jb := min(nb, mn-j)
		next := j + jb
		nbNext := min(nb, mn-next) // 0 after the last panel
		tasks = tasks[:0]
		if j > 0 {
			tasks = append(tasks, task{0, -1})
		}
		far := next + nbNext
		if w := n - far; w > 0 {
			cw := roundUp(max(128, (w+4*threads-1)/(4*threads)), 8)
			for c := far; c < n; c += cw {
				tasks = append(tasks, task{c, min(c+cw, n)})
			}
		}
		var nextTask atomic.Int64
		infoNext := 0
		worker := func(first bool) {
			if first && nbNext > 0 {
				update(j, jb, next, far)
				infoNext = panel(1, next, nbNext)
			}
			for {
				i := int(nextTask.Add(1)) - 1
				if i >= len(tasks) {
					return
				}
				if t := tasks[i]; t.c1 < 0 {
					laswpFwd(j, a, lda, j, next-1, ipiv)
				} else {
					update(j, jb, t.c0, t.c1)
				}
			}
		}
		if threads == 1 {
			worker(true)
		} else {
			var wg sync.WaitGroup
			for w := 1; w < min(threads, len(tasks)+1); w++ {
				wg.Go(func() { worker(false) })
			}
			worker(true)
			wg.Wait()
		}
		if info == 0 {
			info = infoNext
		}
	}
	return info
}

// getrfLeaf is the panel width below which getrfRec factors column by column.
const getrfLeaf = 16

// getrfRec factors the m×n matrix A (m, n > 0) in place with up to th
// goroutines in its updates and returns the LAPACK info value for it.
func getrfRec(th, m, n int, a []float64, lda int, ipiv []int) (info int) {
	mn := min(m, n)
	if mn <= getrfLeaf {
		return getrfUnblocked(m, n, a, lda, ipiv)
	}
	n1 := mn / 2
	n2 := n - n1
	// Factor the left columns [A11; A21].
	info = getrfRec(th, m, n1, a, lda, ipiv[:n1])
	a12 := a[n1*lda:]
	// Apply their interchanges to the right columns, then
	// A12 = L11⁻¹ A12 and A22 -= A21*A12.
	laswpFwd(n2, a12, lda, 0, n1-1, ipiv)
	trsmPar(th, true, false, false, true, n1, n2, 1, a, lda, a12, lda)
	a22 := a[n1+n1*lda:]
	gemm(th, false, false, m-n1, n2, n1, -1, a[n1:], lda, a12, lda, 1, a22, lda)
	// Factor A22 and bring its interchanges into the global numbering.
	info2 := getrfRec(th, m-n1, n2, a22, lda, ipiv[n1:])
	if info == 0 && info2 > 0 {
		info = info2 + n1
	}
	for i := n1; i < mn; i++ {
		ipiv[i] += n1
	}
	// Apply A22's interchanges to the left columns.
	laswpFwd(n1, a, lda, n1, mn-1, ipiv)
	return info
}

// getrfUnblocked is the right-looking unblocked LU (LAPACK's dgetf2) of the
// m×n matrix A.
func getrfUnblocked(m, n int, a []float64, lda int, ipiv []int) (info int) {
	mn := min(m, n)
	for j := range mn {
		cj := a[j*lda : j*lda+m]
		p := j + Idamax(m-j, cj[j:], 1)
		ipiv[j] = p
		if cj[p] == 0 {
			if info == 0 {
				info = j + 1
			}
			continue
		}
		if p != j {
			// Swap whole rows j and p across all n columns.
			for c := range n {
				col := a[c*lda:]
				col[j], col[p] = col[p], col[j]
			}
		}
		if j+1 < m {
			r := 1 / cj[j]
			below := cj[j+1:]
			for i := range below {
				below[i] *= r
			}
		}
		// Rank-one update of the trailing submatrix.
		for c := j + 1; c < n; c++ {
			col := a[c*lda : c*lda+m]
			if t := col[j]; t != 0 {
				axpyUnit(-t, cj[j+1:], col[j+1:])
			}
		}
	}
	return info
}

// laswpFwd applies the interchanges ipiv[k1..k2] in order to n columns of A
// (Dlaswp without checks).
func laswpFwd(n int, a []float64, lda int, k1, k2 int, ipiv []int) {
	const nb = laswpBlock
	for j0 := 0; j0 < n; j0 += nb {
		j1 := min(j0+nb, n)
		for k := k1; k <= k2; k++ {
			if p := ipiv[k]; p != k {
				for j := j0; j < j1; j++ {
					c := a[j*lda:]
					c[k], c[p] = c[p], c[k]
				}
			}
		}
	}
}
