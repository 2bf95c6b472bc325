package linalg

// trsmKernMax is the largest triangle trsmKernLower takes whole: its packed
// form (about m²/2 elements) is read once per nr columns of B, so it should
// stay in L2. Larger triangles are first halved by trsmRec.
const trsmKernMax = 256

// trsmKernLower solves op(A)*X = alpha*B for X where op(A) is m×m lower
// triangular (A lower and not transposed, or A upper and transposed), with
// the Dgemm micro-kernel doing all the arithmetic. This is the shape HPL
// solves for every panel (192 rows, thousands of columns), where the
// recursive split spends its time packing B for Dgemm calls of a few rows.
//
// Left-looking by row blocks of mr: for each strip of nr columns of B and
// each row block I,
//
//	R   = B_I - L_{I,<I} X_{<I}   (micro-kernel, k = the rows above I)
//	X_I = inv(L_II) R             (micro-kernel, k = mr)
//
// op(A)'s rows are packed once as the kernel's A micro-panels, each
// followed by the inverse of its diagonal block; the solved rows X_{<I}
// of the strip accumulate in a packed B micro-panel. Inverting only mr×mr
// diagonal blocks (8 or 24 rows) keeps the arithmetic as accurate as
// forward substitution for the well-scaled triangles of LU (unit diagonal,
// entries at most 1 in magnitude after partial pivoting).
func trsmKernLower(kn microKernel, trans, unit bool, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	mr, nr := kn.mr, kn.nr
	nblk := (m + mr - 1) / mr
	// Block I's panel starts at off[I]: mr*i0 elements of
	// op(A)[i0:i0+mr, 0:i0], then the mr×mr inverse of the diagonal block.
	off := make([]int, nblk+1)
	for blk := range nblk {
		off[blk+1] = off[blk] + mr*blk*mr + mr*mr
	}
	// Dgemm's buffer cache: the packed triangle as "A", the strip's solved
	// rows as "B".
	bufs := getBufs(1, off[nblk], nblk*mr*nr)
	defer putBufs(bufs)
	lp, xp := bufs.a[0], bufs.b
	for blk := range nblk {
		i0 := blk * mr
		rows := min(mr, m-i0)
		d := lp[off[blk]:off[blk+1]]
		if i0 > 0 {
			packA(trans, mr, rows, i0, a, lda, i0, 0, d)
		}
		invLowerBlock(trans, unit, rows, mr, a, lda, i0, d[mr*i0:])
	}
	tmp := bufs.tmp[0]
	for j0 := 0; j0 < n; j0 += nr {
		cols := min(nr, n-j0)
		if alpha != 1 {
			for x := range cols {
				col := b[(j0+x)*ldb : (j0+x)*ldb+m]
				for i := range col {
					col[i] *= alpha
				}
			}
		}
		for blk := range nblk {
			i0 := blk * mr
			rows := min(mr, m-i0)
			// The tile: B itself when whole, else a zero-padded copy.
			var c []float64
			ldc := ldb
			if rows == mr && cols == nr {
				c = b[i0+j0*ldb : i0+j0*ldb+(nr-1)*ldb+mr]
			} else {
				c, ldc = tmp[:mr*nr], mr
				clear(c)
				for x := range cols {
					copy(c[x*mr:x*mr+rows], b[i0+(j0+x)*ldb:])
				}
			}
			p := lp[off[blk]:off[blk+1]]
			if i0 > 0 {
				kn.fn(i0, &p[0], &xp[0], &c[0], ldc, -1)
			}
			// R goes into the packed X panel, the tile is cleared, and
			// X_I = inv(L_II) R is written over it.
			xi := xp[i0*nr : (i0+mr)*nr]
			for x := range nr {
				cc := c[x*ldc : x*ldc+mr]
				for r, v := range cc {
					xi[r*nr+x] = v
				}
				clear(cc)
			}
			kn.fn(mr, &p[mr*i0], &xi[0], &c[0], ldc, 1)
			for x := range nr {
				for r, v := range c[x*ldc : x*ldc+mr] {
					xi[r*nr+x] = v
				}
			}
			if ldc == mr {
				for x := range cols {
					copy(b[i0+(j0+x)*ldb:i0+(j0+x)*ldb+rows], c[x*mr:x*mr+rows])
				}
			}
		}
	}
}

// invLowerBlock writes the inverse of the rows×rows diagonal block of
// op(A) at (i0, i0) (lower triangular; unit: ones on the diagonal, which is
// not read) into dst as an mr×mr micro-panel for the kernel's A operand
// (column l of the inverse at dst[l*mr:]), padded with the identity.
func invLowerBlock(trans, unit bool, rows, mr int, a []float64, lda, i0 int, dst []float64) {
	at := func(i, j int) float64 { // op(A)[i0+i, i0+j]
		if trans {
			return a[i0+j+(i0+i)*lda]
		}
		return a[i0+i+(i0+j)*lda]
	}
	clear(dst)
	// Column l of the inverse solves T y = e_l by forward substitution.
	for l := range mr {
		y := dst[l*mr : l*mr+mr]
		if l >= rows {
			y[l] = 1
			continue
		}
		for i := l; i < rows; i++ {
			s := 0.0
			if i == l {
				s = 1
			}
			for k := l; k < i; k++ {
				s -= at(i, k) * y[k]
			}
			if !unit {
				s /= at(i, i)
			}
			y[i] = s
		}
	}
}
