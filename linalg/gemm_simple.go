package linalg

// gemmSimple is the straightforward column-oriented triple loop, used for
// tiny products where packing costs more than it saves. Arguments are
// already checked; m, n, k > 0 and alpha != 0.
func gemmSimple(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for j := range n {
		cj := c[j*ldc : j*ldc+m]
		if beta == 0 {
			clear(cj)
		} else if beta != 1 {
			for i := range cj {
				cj[i] *= beta
			}
		}
		if !transA {
			// C[:,j] += alpha * sum_l A[:,l] * op(B)[l,j]
			for l := range k {
				var blj float64
				if transB {
					blj = b[j+l*ldb]
				} else {
					blj = b[l+j*ldb]
				}
				if t := alpha * blj; t != 0 {
					axpyUnit(t, a[l*lda:l*lda+m], cj)
				}
			}
			continue
		}
		// C[i,j] += alpha * dot(A[:,i], op(B)[:,j])
		for i := range m {
			ai := a[i*lda : i*lda+k]
			var s float64
			if transB {
				for l, v := range ai {
					s += v * b[j+l*ldb]
				}
			} else {
				bj := b[j*ldb : j*ldb+k]
				for l, v := range ai {
					s += v * bj[l]
				}
			}
			cj[i] += alpha * s
		}
	}
}
