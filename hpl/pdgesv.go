package hpl

import (
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/linalg"
)

// Matrix is this process's part of the N x (N+1) system [A | b], block-cyclic over the grid:
// A is column-major with leading dimension LD, Mp rows and Nq+1 columns (the last one holds
// b on the process column that owns global column N, and is scratch elsewhere). After the
// solve X holds the solution's entries of this process's Nq columns.
type Matrix struct {
	N, NB  int
	Mp, Nq int
	LD     int
	A      []float64
	X      []float64
	Info   int    // 1-based global column of the first zero pivot, 0 if none
	Timing Timing // this process's time per phase of the last solve
}

// NewMatrix allocates this process's part of an N x (N+1) system with NB x NB blocks.
// The leading dimension is a multiple of align and not a power of two (netlib's choice, to
// keep columns off the same cache sets).
func NewMatrix(g *Grid, n, nb, align int) *Matrix {
	mp := numroc(n, nb, g.MyRow, g.P)
	nq := numroc(n, nb, g.MyCol, g.Q)
	ld, _ := leadingDim(mp, align) // RunTest checked that it fits
	a := make([]float64, ld*(nq+1))
	adviseHuge(a)
	return &Matrix{N: n, NB: nb, Mp: mp, Nq: nq, LD: ld, A: a, X: make([]float64, nq)}
}

// Generate fills the system with HPL's random matrix for seed (b is column N).
func (m *Matrix) Generate(g *Grid, seed int) {
	MatGen(m.N, m.N+1, m.NB, g.P, g.Q, g.MyRow, g.MyCol, m.A, m.LD, seed)
}

// solver holds one factorization's state on one process.
type solver struct {
	g             *Grid
	algo          Algo
	n, nb, mp, ld int
	nqb           int // local columns including b's
	a             []float64
	panelBufs     [][]float64
	factorBuf     []float64 // the factorization's workspace when packL2
	// packL2: panels travel with L2 packed for the trailing Dgemm (linalg.PackA), by the
	// processes that factor them, once, instead of by every Dgemm that reads them. Every
	// process must use the same layout, so it is agreed on at the start (see agreePacking).
	packL2       bool
	diagBuf      []float64
	pivBuf       []float64
	ubuf, rowBuf []float64
	progress     func(done, total int)
	timing       Timing
}

// Timing is the time one process spent in each phase of a solve, in seconds (netlib's
// HPL_DETAILED_TIMING): RFact the panel factorizations, of which PFact in the leaf
// factorizations and MxSwp in the pivot searches' communication; Update the trailing updates,
// of which LaSwp the row interchanges and U's broadcast; UpTrSv the back substitution.
type Timing struct {
	RFact, PFact, MxSwp, Update, LaSwp, UpTrSv float64
}

// timed adds the time until the returned function is called to *acc.
func (s *solver) timed(acc *float64) func() {
	t0 := time.Now()
	return func() { *acc += time.Since(t0).Seconds() }
}

// Solve factors [A | b] in place with partial pivoting (right-looking blocked LU, panels
// broadcast along process rows, look-ahead when algo.Depth > 0) and solves for x (netlib's
// HPL_pdgesv followed by HPL_pdtrsv). It is collective over the grid. progress, if not nil,
// is called after each panel on every process.
func Solve(g *Grid, algo Algo, m *Matrix, progress func(done, total int)) error {
	s, err := newSolver(g, algo, m, progress)
	if err != nil {
		return err
	}
	return s.solve(m)
}

// newSolver sets up a solve of m on this process (collective over the grid: the ranks agree
// on the panels' layout) with its workspace allocated and touched, linalg's packing buffers
// too (linalg.Reserve), so that a timed solve does not pay for fresh pages: on a VM the first
// touch of a page may be when the host backs it. rocHPL likewise allocates its
// panels with the matrix, before the timer; netlib allocates them inside HPL_pdgesv.
func newSolver(g *Grid, algo Algo, m *Matrix, progress func(done, total int)) (*solver, error) {
	s := &solver{g: g, algo: algo, n: m.N, nb: m.NB, mp: m.Mp, ld: m.LD, a: m.A,
		nqb: numroc(m.N+1, m.NB, g.MyCol, g.Q), progress: progress}
	// A window deeper than the panels holds them all; a block wider than the matrix is the
	// matrix (HPL.dat's DEPTH and NB can be anything).
	nblk := (m.N + m.NB - 1) / m.NB
	s.panelBufs = make([][]float64, min(max(algo.Depth, 0), nblk)+1)
	jb := min(m.NB, m.N)
	growBuf(&s.diagBuf, jb*jb)
	s.pivBuf = make([]float64, 2+jb)
	var err error
	if s.packL2, err = agreePacking(g.All, panelLayout(g.All.Rank(), m.NB)); err != nil {
		return nil, err
	}
	s.reserve()
	linalg.Reserve()
	return s, nil
}

// reserve allocates what the first panel, the largest, needs: every slot of the look-ahead
// window, the factorization's workspace where this process column factors panels, and U's
// buffer on grids with several process rows (U and the rows displaced below it, at most
// 2 x NB rows, by this process's columns).
func (s *solver) reserve() {
	if s.n == 0 {
		return
	}
	g := s.g
	jb := min(s.nb, s.n)
	mloc := s.mp - numroc(jb, s.nb, g.MyRow, g.P)
	for i := range s.panelBufs {
		growBuf(&s.panelBufs[i], s.panelBody(jb, mloc)+jb)
	}
	if s.packL2 && g.MyCol < (s.n+s.nb-1)/s.nb {
		growBuf(&s.factorBuf, (jb+mloc)*jb)
	}
	if g.P > 1 {
		growBuf(&s.ubuf, 2*jb*s.nqb)
	}
}

// solve runs the factorization and the back substitution.
func (s *solver) solve(m *Matrix) error {
	info, err := s.factorAll()
	if err != nil {
		return err
	}
	m.Info = info
	if info != 0 {
		return nil
	}
	stop := s.timed(&s.timing.UpTrSv)
	err = s.backSolve(m.X)
	stop()
	m.Timing = s.timing
	return err
}

// panelLayout is the layout in which this process (rank of the grid) packs panels of nb
// columns, 0 if it cannot. It is a variable, and takes the rank, so that tests can give
// ranks different ones.
var panelLayout = func(rank, nb int) int {
	if linalg.PackedALen(0, nb) < 0 {
		return 0
	}
	return linalg.PackedALayout()
}

// agreePacking reports whether every process can pack panels (layout > 0) and all of them
// in the same layout: ranks on hosts with different CPUs may not.
func agreePacking(all *comm.Comm, layout int) (bool, error) {
	v := []float64{float64(layout), -float64(layout)}
	if err := collectives.Allreduce(all, nil, v, maxOp); err != nil {
		return false, err
	}
	return layout > 0 && v[0] == -v[1], nil // the largest layout is also the smallest
}

// factorAll runs the panel loop and returns the global first zero pivot (1-based, 0 if none).
// With look-ahead depth d (netlib's HPL_pdgesvK2) panels k..k+d-1 are factored and broadcast
// when iteration k starts, and the columns right of them have been updated by the panels
// before k. Iteration k brings panel k+d up to date (panels k..k+d-1 applied to its columns),
// factors it and sends it on its way while the rest of the trailing matrix takes panel k.
// Depth 0 updates everything with panel k first and factors panel k+1 after.
func (s *solver) factorAll() (int, error) {
	g := s.g
	nblk := (s.n + s.nb - 1) / s.nb
	if nblk == 0 {
		return 0, nil
	}
	depth := min(max(s.algo.Depth, 0), nblk) // deeper is the same: every panel is in the window
	panels := make([]*panel, nblk)
	// cols is the local column range of panel j's columns (empty off its process column).
	cols := func(j int) (int, int) {
		jj := j * s.nb
		return numroc(jj, s.nb, g.MyCol, g.Q), numroc(min(jj+s.nb, s.n), s.nb, g.MyCol, g.Q)
	}
	// Fill the window: panel j takes panels 0..j-1, is factored and broadcast.
	for j := 0; j < min(max(depth, 1), nblk); j++ {
		panels[j] = s.newPanel(j)
		if c0, c1 := cols(j); c1 > c0 {
			for i := 0; i < j; i++ {
				if err := s.update(panels[i], c0, c1); err != nil {
					return 0, err
				}
			}
		}
		if err := s.factorAndBcast(panels[j]); err != nil {
			return 0, err
		}
	}
	info := 0
	for k := 0; k < nblk; k++ {
		cur := panels[k]
		if cur.info != 0 && info == 0 {
			info = cur.info
		}
		la := k + depth // the panel to bring into the window
		// The rest: columns right of the window (right of panel k at depth 0), b included;
		// panels in the window already have panel k.
		restFrom := numroc(min((k+1)*s.nb, s.n), s.nb, g.MyCol, g.Q)
		if depth > 0 {
			restFrom = numroc(min((la+1)*s.nb, s.n), s.nb, g.MyCol, g.Q)
		}
		if depth > 0 && la < nblk {
			panels[la] = s.newPanel(la)
			nxt := panels[la]
			if c0, c1 := cols(la); c1 > c0 {
				for i := k; i < la; i++ {
					if err := s.update(panels[i], c0, c1); err != nil {
						return 0, err
					}
				}
				if err := s.factor(nxt); err != nil {
					return 0, err
				}
			}
			// The broadcast runs beside the update, in a goroutine whose waits sleep rather
			// than poll: polling would take a core from this rank's or a neighbour's update.
			req := comm.Go(func() error { return s.bcast(s.g.Row.Patient(), nxt) })
			if err := s.update(cur, restFrom, s.nqb); err != nil {
				return 0, err
			}
			if _, err := req.Wait(); err != nil {
				return 0, err
			}
		} else {
			if err := s.update(cur, restFrom, s.nqb); err != nil {
				return 0, err
			}
			if depth == 0 && k+1 < nblk {
				panels[k+1] = s.newPanel(k + 1)
				if err := s.factorAndBcast(panels[k+1]); err != nil {
					return 0, err
				}
			}
		}
		panels[k] = nil
		if s.progress != nil {
			s.progress(k+1, nblk)
		}
	}
	// Every process learns the first zero pivot.
	v, err := allMax(g.All, infoKey(info))
	if err != nil {
		return 0, err
	}
	return keyInfo(v), nil
}

// infoKey orders infos so that the smallest non-zero wins a max-reduction.
func infoKey(info int) float64 {
	if info == 0 {
		return 0
	}
	return 1 / float64(info)
}

func keyInfo(v float64) int {
	if v == 0 {
		return 0
	}
	return int(1/v + 0.5)
}

// factorAndBcast factors panel p on its process column and broadcasts it along the rows.
func (s *solver) factorAndBcast(p *panel) error {
	if s.g.MyCol == g2p(p.jj, s.nb, s.g.Q) {
		if err := s.factor(p); err != nil {
			return err
		}
	}
	return s.bcast(s.g.Row, p)
}

// bcast sends panel p from its process column along every process row (row: s.g.Row or a
// view of it) with the BCAST topology; receivers unpack the pivots.
func (s *solver) bcast(row *comm.Comm, p *panel) error {
	root := g2p(p.jj, s.nb, s.g.Q)
	if err := bcastPanel(row, p.buf, root, s.algo.BCast, tagPanel+p.k); err != nil {
		return err
	}
	if s.g.MyCol != root {
		s.unpackPivots(p)
	}
	return nil
}

// update applies panel p to local columns [c0, c1): the row interchanges, U = L1^-1 * (the
// panel's rows), and the trailing update A2 -= L2 * U in one Dgemm (netlib's HPL_pdupdate
// with HPL_pdlaswp).
func (s *solver) update(p *panel, c0, c1 int) error {
	nc := c1 - c0
	if nc <= 0 {
		return nil
	}
	defer s.timed(&s.timing.Update)()
	stopSwap := s.timed(&s.timing.LaSwp)
	if s.g.P == 1 {
		// One process row: the interchanges are local, applied in place column by column in
		// pivot order (netlib's HPL_dlaswp00N), U is solved in place, and the update reads U
		// where it lies.
		ld, jb, jj := s.ld, p.jb, p.jj
		swapRows(s.a, ld, s.mp, c0, c1, jj, p.ipiv)
		stopSwap()
		u := s.a[jj+c0*ld:]
		linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, jb, nc, 1, p.l1, p.ldl1, u, ld)
		s.gemmL2(p, nc, u, ld, c0)
		return nil
	}
	g := s.g
	jb, ld := p.jb, s.ld
	prow := g2p(p.jj, s.nb, g.P)
	if cap(s.ubuf) < jb*nc {
		s.ubuf = make([]float64, jb*nc)
	}
	u := s.ubuf[:jb*nc]

	// Where each row of the block ends up: U's row i is original row src[i]; rows outside the
	// block that lose their content receive an original block row (dst -> source block row).
	pos := map[int]int{}
	get := func(r int) int {
		if v, ok := pos[r]; ok {
			return v
		}
		return r
	}
	for i, r := range p.ipiv {
		a := p.jj + i
		pos[a], pos[r] = get(r), get(a)
	}
	src := make([]int, jb)
	for i := range jb {
		src[i] = get(p.jj + i)
	}
	var outside []int // destinations below the block, in increasing order
	for r, v := range pos {
		if r >= p.jj+jb && v != r {
			outside = append(outside, r)
		}
	}
	sortInts(outside)

	long := s.algo.Swap == SwapLong || (s.algo.Swap == SwapMix && nc > s.algo.SwapThr)
	if !long {
		u, ldu, err := s.swapExchange(p, c0, nc, src, outside, pos, prow)
		stopSwap()
		if err != nil {
			return err
		}
		s.gemmL2(p, nc, u, ldu, c0)
		return nil
	}

	// Spread-roll (long, netlib's HPL_pdlaswp01N): U is assembled on the diagonal process
	// row, solved there, and spread then rolled down the process column.
	lrow := func(gr int) int { return g2l(gr, s.nb, g.P) }
	mine := func(gr int) bool { return g2p(gr, s.nb, g.P) == g.MyRow }
	if g.MyRow == prow {
		// Local rows of U are read before any displaced row is written over them; receiving
		// before sending keeps the exchange free of deadlock with rendezvous sends. Copies go
		// column by column: the rows of one column are close in memory, one row is not.
		var ui, ul []int // U rows found here, and their local rows
		for i, r := range src {
			if mine(r) {
				ui, ul = append(ui, i), append(ul, lrow(r))
			}
		}
		var dl, sl []int // displaced rows landing here, and their (local) block rows
		for _, r := range outside {
			if mine(r) {
				dl, sl = append(dl, lrow(r)), append(sl, lrow(pos[r]))
			}
		}
		for j := range nc {
			col := s.a[(c0+j)*ld:]
			uc := u[j*jb:]
			for n, i := range ui {
				uc[i] = col[ul[n]]
			}
			for n, d := range dl {
				col[d] = col[sl[n]]
			}
		}
		if err := s.recvU(p, c0, nc, src, u, prow); err != nil {
			return err
		}
		if err := s.sendDisplaced(p, c0, nc, outside, pos, prow); err != nil {
			return err
		}
		// U = L1^-1 U, and U is final: it goes back into the block rows.
		linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, jb, nc, 1, p.l1, p.ldl1, u, jb)
		lr := lrow(p.jj)
		for j := range nc {
			copy(s.a[lr+(c0+j)*ld:lr+(c0+j)*ld+jb], u[j*jb:(j+1)*jb])
		}
	} else {
		if err := s.sendU(p, c0, nc, src, prow); err != nil {
			return err
		}
		if err := s.recvDisplaced(p, c0, nc, outside, prow); err != nil {
			return err
		}
	}
	order := make([]int, g.P)
	for i := range order {
		order[i] = (prow + i) % g.P
	}
	if err := spreadRoll(g.Col, u, order, tagU); err != nil {
		return err
	}
	stopSwap()
	s.gemmL2(p, nc, u, jb, c0)
	return nil
}

// swapExchange performs the row interchanges and the broadcast of U at once by
// bi-directional exchange (netlib's HPL_pdlaswp00N): every process of the column starts with
// the rows it owns of a table holding U's rows and the block rows displaced below the block;
// in log2(P) steps partners swap everything they hold, so every process ends with the whole
// table, solves U = L1^-1 U itself and writes the rows that land on it. A process count that
// is not a power of two folds the extra processes in first. It returns U and its leading
// dimension.
func (s *solver) swapExchange(p *panel, c0, nc int, src, outside []int, pos map[int]int, prow int) ([]float64, int, error) {
	g := s.g
	c := g.Col
	jb, nb, ld := p.jb, s.nb, s.ld
	nt := jb + len(outside)
	owner := make([]int, nt) // process row holding table row t at the start
	lsrc := make([]int, nt)  // its local row there
	for i, r := range src {
		owner[i], lsrc[i] = g2p(r, nb, g.P), g2l(r, nb, g.P)
	}
	for o, r := range outside {
		owner[jb+o], lsrc[jb+o] = prow, g2l(pos[r], nb, g.P)
	}
	if cap(s.ubuf) < nt*nc {
		s.ubuf = make([]float64, nt*nc)
	}
	t := s.ubuf[:nt*nc]
	var own []int
	for r := range nt {
		if owner[r] == g.MyRow {
			own = append(own, r)
		}
	}
	for j := range nc {
		col, tc := s.a[(c0+j)*ld:], t[j*nt:(j+1)*nt]
		for _, r := range own {
			tc[r] = col[lsrc[r]]
		}
	}
	// rowsOf lists the table rows first owned by the process rows in set.
	rowsOf := func(set func(q int) bool) []int {
		var rows []int
		for r := range nt {
			if set(owner[r]) {
				rows = append(rows, r)
			}
		}
		return rows
	}
	send := func(rows []int, dst int) error {
		buf := s.rowScratch(len(rows) * nc)
		for j := range nc {
			tc := t[j*nt:]
			for n, r := range rows {
				buf[j*len(rows)+n] = tc[r]
			}
		}
		return comm.Send(c, buf, dst, tagU)
	}
	recv := func(rows []int, src int) error {
		buf := s.rowScratch(len(rows) * nc)
		if _, err := comm.Recv(c, buf, src, tagU); err != nil {
			return err
		}
		for j := range nc {
			tc := t[j*nt:]
			for n, r := range rows {
				tc[r] = buf[j*len(rows)+n]
			}
		}
		return nil
	}
	n, me := g.P, g.MyRow
	pof2 := 1
	for pof2*2 <= n {
		pof2 *= 2
	}
	rem := n - pof2
	// Process rows behind new rank x: two for x < rem (the folded pair), else one.
	members := func(x int) (int, int) {
		if x < rem {
			return 2 * x, 2*x + 1
		}
		return x + rem, x + rem
	}
	newRank := me - rem
	if me < 2*rem {
		if me%2 == 0 {
			if err := send(rowsOf(func(q int) bool { return q == me }), me+1); err != nil {
				return nil, 0, wrap(c, "row swap exchange", err)
			}
			newRank = -1
		} else {
			if err := recv(rowsOf(func(q int) bool { return q == me-1 }), me-1); err != nil {
				return nil, 0, wrap(c, "row swap exchange", err)
			}
			newRank = me / 2
		}
	}
	if newRank >= 0 {
		for mask := 1; mask < pof2; mask <<= 1 {
			pn := newRank ^ mask
			group := func(x int) func(q int) bool { // process rows of x's group before this step
				return func(q int) bool {
					for y := range pof2 {
						if y&^(mask-1) == x&^(mask-1) {
							if a, b := members(y); q == a || q == b {
								return true
							}
						}
					}
					return false
				}
			}
			mine, theirs := rowsOf(group(newRank)), rowsOf(group(pn))
			peer, _ := members(pn)
			if pn < rem {
				peer = 2*pn + 1
			}
			// The lower new rank sends first so that rendezvous sends cannot deadlock.
			if newRank < pn {
				if err := send(mine, peer); err != nil {
					return nil, 0, wrap(c, "row swap exchange", err)
				}
				if err := recv(theirs, peer); err != nil {
					return nil, 0, wrap(c, "row swap exchange", err)
				}
			} else {
				if err := recv(theirs, peer); err != nil {
					return nil, 0, wrap(c, "row swap exchange", err)
				}
				if err := send(mine, peer); err != nil {
					return nil, 0, wrap(c, "row swap exchange", err)
				}
			}
		}
	}
	if me < 2*rem {
		all := rowsOf(func(int) bool { return true })
		if me%2 == 1 {
			if err := send(all, me-1); err != nil {
				return nil, 0, wrap(c, "row swap exchange", err)
			}
		} else if err := recv(all, me+1); err != nil {
			return nil, 0, wrap(c, "row swap exchange", err)
		}
	}
	// Everyone solves U and writes the rows that land here.
	linalg.Dtrsm(linalg.Left, linalg.Lower, linalg.NoTrans, linalg.Unit, jb, nc, 1, p.l1, p.ldl1, t, nt)
	var dst, from []int
	if me == prow {
		lr := g2l(p.jj, nb, g.P)
		for i := range jb {
			dst, from = append(dst, lr+i), append(from, i)
		}
	}
	for o, r := range outside {
		if g2p(r, nb, g.P) == me {
			dst, from = append(dst, g2l(r, nb, g.P)), append(from, jb+o)
		}
	}
	for j := range nc {
		col, tc := s.a[(c0+j)*ld:], t[j*nt:]
		for k, d := range dst {
			col[d] = tc[from[k]]
		}
	}
	return t, nt, nil
}

// Messages of the row swap carry rows column by column: rows r0..rk of column c0, then of
// column c0+1, and so on.

// sendU sends the rows of U this process row owns (outside the block) to the diagonal row.
func (s *solver) sendU(p *panel, c0, nc int, src []int, prow int) error {
	g := s.g
	var rows []int
	for _, r := range src {
		if r >= p.jj+p.jb && g2p(r, s.nb, g.P) == g.MyRow {
			rows = append(rows, g2l(r, s.nb, g.P))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	buf := s.rowScratch(len(rows) * nc)
	s.packRows(buf, rows, c0, nc)
	return wrap(g.Col, "row swap", comm.Send(g.Col, buf, prow, tagSwapUp))
}

// recvU receives the rows of U owned by other process rows, one message per process row.
func (s *solver) recvU(p *panel, c0, nc int, src []int, u []float64, prow int) error {
	g := s.g
	for q := range g.P {
		if q == prow {
			continue
		}
		var idx []int
		for i, r := range src {
			if r >= p.jj+p.jb && g2p(r, s.nb, g.P) == q {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		buf := s.rowScratch(len(idx) * nc)
		if _, err := comm.Recv(g.Col, buf, q, tagSwapUp); err != nil {
			return wrap(g.Col, "row swap", err)
		}
		k := len(idx)
		for j := range nc {
			uc, bc := u[j*p.jb:], buf[j*k:(j+1)*k]
			for n, i := range idx {
				uc[i] = bc[n]
			}
		}
	}
	return nil
}

// sendDisplaced sends the original block rows that move below the block to the process rows
// that own their destinations (the diagonal row's own were copied already).
func (s *solver) sendDisplaced(p *panel, c0, nc int, outside []int, pos map[int]int, prow int) error {
	g := s.g
	for q := range g.P {
		if q == prow {
			continue
		}
		var srcRows []int
		for _, r := range outside {
			if g2p(r, s.nb, g.P) == q {
				srcRows = append(srcRows, g2l(pos[r], s.nb, g.P))
			}
		}
		if len(srcRows) == 0 {
			continue
		}
		buf := s.rowScratch(len(srcRows) * nc)
		s.packRows(buf, srcRows, c0, nc)
		if err := comm.Send(g.Col, buf, q, tagSwapDn); err != nil {
			return wrap(g.Col, "row swap", err)
		}
	}
	return nil
}

// recvDisplaced receives the block rows that land on this process row.
func (s *solver) recvDisplaced(p *panel, c0, nc int, outside []int, prow int) error {
	g := s.g
	var rows []int
	for _, r := range outside {
		if g2p(r, s.nb, g.P) == g.MyRow {
			rows = append(rows, g2l(r, s.nb, g.P))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	buf := s.rowScratch(len(rows) * nc)
	if _, err := comm.Recv(g.Col, buf, prow, tagSwapDn); err != nil {
		return wrap(g.Col, "row swap", err)
	}
	k := len(rows)
	for j := range nc {
		col, bc := s.a[(c0+j)*s.ld:], buf[j*k:(j+1)*k]
		for n, lr := range rows {
			col[lr] = bc[n]
		}
	}
	return nil
}

// packRows packs local rows of columns [c0, c0+nc), column by column.
func (s *solver) packRows(buf []float64, lrows []int, c0, nc int) {
	k := len(lrows)
	for j := range nc {
		col, bc := s.a[(c0+j)*s.ld:], buf[j*k:(j+1)*k]
		for n, lr := range lrows {
			bc[n] = col[lr]
		}
	}
}

func (s *solver) rowScratch(n int) []float64 {
	if cap(s.rowBuf) < n {
		s.rowBuf = make([]float64, n)
	}
	return s.rowBuf[:n]
}

func sortInts(v []int) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// backSolve solves U x = y, y being the updated column N, block by block from the bottom
// (netlib's HPL_pdtrsv): the process row of block k sums its partial products onto the
// diagonal process, which solves the triangle and sends x_k down its process column, whose
// processes fold x_k into their partial sums for the rows above. x ends on every process of
// the process column that owns each entry.
func (s *solver) backSolve(x []float64) error {
	g := s.g
	nb, ld := s.nb, s.ld
	nblk := (s.n + nb - 1) / nb
	bcol := g2p(s.n, nb, g.Q)
	w := make([]float64, max(s.mp, 1))
	if g.MyCol == bcol {
		lc := numroc(s.n, nb, g.MyCol, g.Q)
		copy(w, s.a[lc*ld:lc*ld+s.mp])
	}
	xk := make([]float64, min(nb, s.n))
	for k := nblk - 1; k >= 0; k-- {
		kk := k * nb
		kb := min(nb, s.n-kk)
		prow, pcol := g2p(kk, nb, g.P), g2p(kk, nb, g.Q)
		xb := xk[:kb]
		if g.MyRow == prow {
			lr := g2l(kk, nb, g.P)
			part := w[lr : lr+kb]
			if err := reduceSumTo(g.Row, part, pcol, hot); err != nil {
				return err
			}
			if g.MyCol == pcol {
				copy(xb, part)
				lc := g2l(kk, nb, g.Q)
				linalg.Dtrsm(linalg.Left, linalg.Upper, linalg.NoTrans, linalg.NonUnit, kb, 1, 1,
					s.a[lr+lc*ld:], ld, xb, kb)
			}
		}
		if g.MyCol == pcol {
			if err := collectives.BcastWith(g.Col, xb, prow, hot); err != nil {
				return err
			}
			lc := g2l(kk, nb, g.Q)
			copy(x[lc:lc+kb], xb)
			if above := numroc(kk, nb, g.MyRow, g.P); above > 0 {
				linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, above, 1, kb, -1, s.a[lc*ld:], ld, xb, kb,
					1, w, max(s.mp, 1))
			}
		}
	}
	return nil
}

// swapRows applies the interchanges ipiv (row jj+i with row ipiv[i], in order) to columns
// [c0, c1) of the column-major a (netlib's HPL_dlaswp00N). The rows are scattered down each
// column, so each access is likely a cache miss: four columns at a time keep four
// independent misses in flight per pivot and read each pivot once per four columns.
func swapRows(a []float64, ld, m, c0, c1, jj int, ipiv []int) {
	j := c0
	for ; j+4 <= c1; j += 4 {
		x0 := a[j*ld : j*ld+m]
		x1 := a[(j+1)*ld : (j+1)*ld+m]
		x2 := a[(j+2)*ld : (j+2)*ld+m]
		x3 := a[(j+3)*ld : (j+3)*ld+m]
		for i, r := range ipiv {
			d := jj + i
			x0[d], x0[r] = x0[r], x0[d]
			x1[d], x1[r] = x1[r], x1[d]
			x2[d], x2[r] = x2[r], x2[d]
			x3[d], x3[r] = x3[r], x3[d]
		}
	}
	for ; j < c1; j++ {
		x := a[j*ld : j*ld+m]
		for i, r := range ipiv {
			x[jj+i], x[r] = x[r], x[jj+i]
		}
	}
}
