package hpl

import (
	"math"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/linalg"
)

// panel is one block column of jb columns starting at global row and column jj, as the
// process column that factors it and, after the broadcast, every process of its process row
// holds it. The factorization works in w, column-major with ldw = jb + mloc rows: rows
// 0..jb-1 are the diagonal block (replicated down the process column, as netlib's L1), rows
// jb.. are this process's own rows of the panel below the diagonal block (L2). It swaps
// whole rows of w, so every sub-block the recursive variants touch is a contiguous piece.
//
// The updates read L1 (the unit lower triangle, for U = L1^-1 U) and L2 (the A of the
// trailing Dgemm). When the solver packs L2 (see solver.packL2), the broadcast carries L1
// and L2 packed in the Dgemm kernel's layout, and w is the factoring process's workspace;
// otherwise the broadcast carries w itself.
type panel struct {
	k, jj, jb int
	mloc, ldw int
	lp0       int       // local row index of w's row jb (first local row below the block)
	w         []float64 // ldw x jb; nil after the broadcast on processes that did not factor
	l1        []float64 // L1 (and U1 above it), jb x jb, leading dimension ldl1
	ldl1      int
	l2        []float64 // L2, mloc x jb column-major with leading dimension ldw, when not packed
	l2p       []float64 // L2 packed by linalg.PackA, when packed
	ipiv      []int     // global pivot rows, jb of them
	buf       []float64 // what the broadcast carries: w, or L1 then L2 packed; then ipiv as float64
	info      int       // 1-based global column of the first zero pivot, 0 if none
}

// newPanel lays out panel k for this process's row of the grid.
func (s *solver) newPanel(k int) *panel {
	jj := k * s.nb
	jb := min(s.nb, s.n-jj)
	lp0 := numroc(jj+jb, s.nb, s.g.MyRow, s.g.P)
	mloc := s.mp - lp0
	ldw := jb + mloc
	p := &panel{k: k, jj: jj, jb: jb, mloc: mloc, ldw: ldw, lp0: lp0, ipiv: make([]int, jb)}
	body := s.panelBody(jb, mloc)
	slot := k % len(s.panelBufs) // the look-ahead window holds depth+1 panels
	p.buf = growBuf(&s.panelBufs[slot], body+jb)
	if s.packL2 {
		p.l1, p.ldl1 = p.buf[:jb*jb], jb
		p.l2p = p.buf[jb*jb : body]
		if s.g.MyCol == g2p(jj, s.nb, s.g.Q) {
			p.w = growBuf(&s.factorBuf, ldw*jb)
		}
	} else {
		p.w = p.buf[:body]
		p.l1, p.ldl1 = p.w, ldw
		p.l2 = p.w[jb:]
	}
	return p
}

// panelBody is the length of what a panel of jb columns and mloc local rows below its
// diagonal block broadcasts before its pivots: w, or L1 and the packed L2.
func (s *solver) panelBody(jb, mloc int) int {
	if s.packL2 {
		return jb*jb + linalg.PackedALen(mloc, jb)
	}
	return (jb + mloc) * jb
}

// growBuf returns (*b)[:n], first replacing *b with a larger buffer if it is too small.
func growBuf(b *[]float64, n int) []float64 {
	if cap(*b) < n {
		*b = make([]float64, n)
		adviseHuge(*b)
		prefault(*b) // the factorization or the broadcast writes all of it soon
	}
	return (*b)[:n]
}

// globalRow is the global row of row r of w.
func (s *solver) globalRow(p *panel, r int) int {
	if r < p.jb {
		return p.jj + r
	}
	return l2g(p.lp0+r-p.jb, s.nb, s.g.MyRow, s.g.P)
}

// factor factors panel p on its process column (netlib's HPL_pdfact): it gathers the
// diagonal block down the column, runs the recursive factorization with pivot search over
// the column, and writes the diagonal block (L1\U1) back to the matrix. The pivots go in
// p.ipiv and p.buf is ready to broadcast.
func (s *solver) factor(p *panel) error {
	defer s.timed(&s.timing.RFact)()
	g := s.g
	lc := g2l(p.jj, s.nb, g.Q) // local column of the panel
	prow := g2p(p.jj, s.nb, g.P)
	ld := s.ld
	// Diagonal block: the owner packs it, the column receives it.
	diag := s.diagBuf[:p.jb*p.jb]
	if g.MyRow == prow {
		lr := g2l(p.jj, s.nb, g.P)
		for j := range p.jb {
			copy(diag[j*p.jb:(j+1)*p.jb], s.a[lr+(lc+j)*ld:lr+(lc+j)*ld+p.jb])
		}
	}
	if err := collectives.BcastWith(g.Col, diag, prow, hot); err != nil {
		return err
	}
	for j := range p.jb {
		col := p.w[j*p.ldw : (j+1)*p.ldw]
		copy(col[:p.jb], diag[j*p.jb:(j+1)*p.jb])
		copy(col[p.jb:], s.a[p.lp0+(lc+j)*ld:s.mp+(lc+j)*ld])
	}
	if err := s.rfact(p, 0, p.jb); err != nil {
		return err
	}
	if g.MyRow == prow {
		lr := g2l(p.jj, s.nb, g.P)
		for j := range p.jb {
			copy(s.a[lr+(lc+j)*ld:lr+(lc+j)*ld+p.jb], p.w[j*p.ldw:j*p.ldw+p.jb])
		}
	}
	if s.packL2 {
		for j := range p.jb {
			copy(p.l1[j*p.jb:(j+1)*p.jb], p.w[j*p.ldw:j*p.ldw+p.jb])
		}
		linalg.PackA(p.mloc, p.jb, p.w[p.jb:], p.ldw, p.l2p)
	}
	s.packPivots(p)
	return nil
}

// The pivots travel as the broadcast's last jb entries.
func (s *solver) packPivots(p *panel) {
	at := len(p.buf) - p.jb
	for i, v := range p.ipiv {
		p.buf[at+i] = float64(v)
	}
}

func (s *solver) unpackPivots(p *panel) {
	at := len(p.buf) - p.jb
	for i := range p.ipiv {
		p.ipiv[i] = int(p.buf[at+i])
	}
}

// gemmL2 computes C -= L2 * U for nc columns of U (leading dimension ldu) and of C (the
// matrix from local row p.lp0 and column c0 on): the trailing update.
func (s *solver) gemmL2(p *panel, nc int, u []float64, ldu int, c0 int) {
	if p.mloc == 0 || nc == 0 {
		return
	}
	c := s.a[p.lp0+c0*s.ld:]
	if p.l2p != nil {
		linalg.DgemmPackedA(linalg.NoTrans, p.mloc, nc, p.jb, -1, p.l2p, u, ldu, 1, c, s.ld)
		return
	}
	linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, p.mloc, nc, p.jb, -1, p.l2, p.ldw, u, ldu, 1, c, s.ld)
}

// rfact factors columns [off, off+n) of the panel, already updated by the columns left of
// off, recursively (netlib's HPL_pdrpan{ll,cr,rl}): it splits them into chunks of
// nbmin-multiples, NDIV per level, until at most NBMIN columns remain, which the PFACT variant
// factors. The RFACT variant decides when each chunk's updates are applied.
func (s *solver) rfact(p *panel, off, n int) error {
	nbmin := s.algo.NBMin
	if n <= nbmin {
		return s.pfact(p, off, n)
	}
	ndiv := s.algo.NDiv
	nb1 := (((n+nbmin-1)/nbmin + ndiv - 1) / ndiv) * nbmin
	w, ldw := p.w, p.ldw
	at := func(r, c int) []float64 { return w[r+c*ldw:] }
	for c0 := off; c0 < off+n; c0 += nb1 {
		cb := min(nb1, off+n-c0)
		left := c0 - off           // columns of this level already factored
		right := off + n - c0 - cb // columns of this level right of the chunk
		rows := ldw - c0           // rows from the chunk's diagonal down
		switch s.algo.RFact {
		case Left:
			if left > 0 {
				// U part of the chunk from the unit lower triangle of the left columns, then the
				// rows below take the left columns' contribution.
				linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, left, cb, 1,
					at(off, off), ldw, at(off, c0), ldw)
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, rows, cb, left, -1, at(c0, off), ldw,
					at(off, c0), ldw, 1, at(c0, c0), ldw)
			}
			if err := s.rfact(p, c0, cb); err != nil {
				return err
			}
		case Crout:
			if left > 0 {
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, rows, cb, left, -1, at(c0, off), ldw,
					at(off, c0), ldw, 1, at(c0, c0), ldw)
			}
			if err := s.rfact(p, c0, cb); err != nil {
				return err
			}
			if right > 0 {
				// The chunk's rows of U to the right of it.
				if left > 0 {
					linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, cb, right, left, -1, at(c0, off), ldw,
						at(off, c0+cb), ldw, 1, at(c0, c0+cb), ldw)
				}
				linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, cb, right, 1,
					at(c0, c0), ldw, at(c0, c0+cb), ldw)
			}
		default: // Right
			if err := s.rfact(p, c0, cb); err != nil {
				return err
			}
			if right > 0 {
				linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, cb, right, 1,
					at(c0, c0), ldw, at(c0, c0+cb), ldw)
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, rows-cb, right, cb, -1, at(c0+cb, c0), ldw,
					at(c0, c0+cb), ldw, 1, at(c0+cb, c0+cb), ldw)
			}
		}
	}
	return nil
}

// pfact factors at most NBMIN columns [off, off+n), column by column, with the PFACT variant
// (netlib's HPL_pdpan{ll,cr,rl}): left-looking updates each column from the columns before
// it just before its pivot search, Crout also finishes the column's row of U then, and
// right-looking updates everything right of a column as soon as it is factored.
func (s *solver) pfact(p *panel, off, n int) error {
	defer s.timed(&s.timing.PFact)()
	w, ldw := p.w, p.ldw
	at := func(r, c int) []float64 { return w[r+c*ldw:] }
	for c := off; c < off+n; c++ {
		done := c - off // columns of this leaf already factored
		switch s.algo.PFact {
		case Left:
			if done > 0 {
				linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, done, 1, 1,
					at(off, off), ldw, at(off, c), ldw)
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, ldw-c, 1, done, -1, at(c, off), ldw,
					at(off, c), ldw, 1, at(c, c), ldw)
			}
		case Crout:
			if done > 0 {
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, ldw-c, 1, done, -1, at(c, off), ldw,
					at(off, c), ldw, 1, at(c, c), ldw)
			}
		}
		if err := s.pivot(p, c); err != nil {
			return err
		}
		if s.algo.PFact == Crout && done > 0 && c+1 < off+n {
			// Row c of U right of the diagonal, from the finished rows above.
			linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, 1, off+n-c-1, done, -1, at(c, off), ldw,
				at(off, c+1), ldw, 1, at(c, c+1), ldw)
		}
		piv := w[c+c*ldw]
		if piv != 0 {
			below := w[c+1+c*ldw : (c+1)*ldw]
			if math.Abs(piv) >= safeMin {
				linalg.Dscal(len(below), 1/piv, below, 1)
			} else {
				for i := range below {
					below[i] /= piv
				}
			}
		}
		if s.algo.PFact == Right && c+1 < off+n && ldw-c-1 > 0 {
			linalg.Dger(ldw-c-1, off+n-c-1, -1, at(c+1, c), 1, at(c, c+1), ldw, at(c+1, c+1), ldw)
		}
	}
	return nil
}

// safeMin is the smallest number whose reciprocal does not overflow (LAPACK's dlamch('s')).
const safeMin = 0x1p-1022

// pivot finds the pivot of column c of the panel over the process column (the largest
// magnitude, the lowest global row on a tie, as LAPACK's idamax), swaps it into row c
// across the whole panel width and records it (netlib's HPL_pdmxswp and HPL_dlocswp).
func (s *solver) pivot(p *panel, c int) error {
	w, ldw, jb := p.w, p.ldw, p.jb
	col := w[c+c*ldw : (c+1)*ldw]
	r := c + linalg.Idamax(len(col), col, 1)
	// msg: |value|, global row, then the candidate row (jb entries).
	msg := s.pivBuf[:2+jb]
	msg[0] = math.Abs(w[r+c*ldw])
	msg[1] = float64(s.globalRow(p, r))
	for j := range jb {
		msg[2+j] = w[r+j*ldw]
	}
	stop := s.timed(&s.timing.MxSwp)
	err := collectives.AllreduceWith(s.g.Col, nil, msg, pivotOp, hot)
	stop()
	if err != nil {
		return err
	}
	gp := int(msg[1])
	p.ipiv[c] = gp
	if msg[0] == 0 && p.info == 0 {
		p.info = p.jj + c + 1
	}
	switch {
	case gp < p.jj+jb: // inside the diagonal block, replicated: swap locally everywhere
		lr := gp - p.jj
		if lr != c {
			linalg.Dswap(jb, w[c:], ldw, w[lr:], ldw)
		}
	default:
		if g2p(gp, s.nb, s.g.P) == s.g.MyRow {
			lr := jb + g2l(gp, s.nb, s.g.P) - p.lp0
			for j := range jb {
				w[lr+j*ldw] = w[c+j*ldw]
			}
		}
		for j := range jb {
			w[c+j*ldw] = msg[2+j]
		}
	}
	return nil
}

// maxLoc keeps the candidate with the larger magnitude, the lower global row on a tie.
func maxLoc(acc, in []float64) {
	if in[0] > acc[0] || (in[0] == acc[0] && in[1] < acc[1]) {
		copy(acc, in)
	}
}
