package hpl

import (
	"math"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/linalg"
)

// Options tune a test beyond HPL.dat.
type Options struct {
	// Progress, if set, is called on the grid's rank 0 after each panel.
	Progress func(done, total int)
	// Seed of the matrix; 0 means netlib's HPL_ISEED.
	Seed int
	// DetailedTiming reports the slowest process's time per phase (netlib built with
	// -DHPL_DETAILED_TIMING) in Result.Detail.
	DetailedTiming bool
}

// RunTest generates the system, solves it, times the solve (the slowest process's wall time)
// and checks the scaled residual against thresh, as netlib's HPL_pdtest does. It is
// collective over the grid; every process returns the same Result. m receives the matrix
// (regenerated after the solve when the residual is checked) and the solution; it is nil
// when the test was skipped for want of memory (Result.NoMemory).
func RunTest(g *Grid, algo Algo, n, nb int, thresh float64, opt Options) (*Result, *Matrix, error) {
	seed := opt.Seed
	if seed == 0 {
		seed = Seed
	}
	algo.Order = g.Order
	r := &Result{N: n, NB: nb, P: g.P, Q: g.Q, Variant: algo.Code()}
	if n < math.MaxInt && nb > n+1 {
		// One block holds all of [A | b] either way; NB from HPL.dat can be anything.
		nb = n + 1
	}
	// Netlib tries to allocate and skips the test on every process when one fails; a Go
	// allocation too large for the machine ends the process instead, so the need is compared
	// with the memory available first, collectively.
	mv, err := checkMemory(g, n, nb, algo)
	if err != nil {
		return nil, nil, err
	}
	if !mv.fits {
		r.NoMemory, r.MemRow, r.MemCol, r.Need, r.Have = true, mv.row, mv.col, mv.need, mv.has
		return r, nil, nil
	}
	m := NewMatrix(g, n, nb, algo.Align)
	m.Generate(g, seed)

	var progress func(int, int)
	if g.All.Rank() == 0 {
		progress = opt.Progress
	}
	s, err := newSolver(g, algo, m, progress)
	if err != nil {
		return nil, nil, err
	}
	if err := collectives.Barrier(g.All); err != nil {
		return nil, nil, err
	}
	r.Start = time.Now()
	t0 := time.Now()
	if err := s.solve(m); err != nil {
		return nil, nil, err
	}
	elapsed := time.Since(t0).Seconds()
	r.End = time.Now()
	wt, err := allMax(g.All, elapsed)
	if err != nil {
		return nil, nil, err
	}
	r.Time = wt
	r.Gflops = Gflops(n, wt)
	// Every process reports rank 0's clock, as netlib prints process 0's.
	se := []float64{float64(r.Start.UnixNano()), float64(r.End.UnixNano())}
	if err := collectives.Bcast(g.All, se, 0); err != nil {
		return nil, nil, err
	}
	r.Start, r.End = time.Unix(0, int64(se[0])), time.Unix(0, int64(se[1]))
	if opt.DetailedTiming {
		t := m.Timing
		v := []float64{t.RFact, t.PFact, t.MxSwp, t.Update, t.LaSwp, t.UpTrSv}
		if err := collectives.Allreduce(g.All, nil, v, maxOp); err != nil {
			return nil, nil, err
		}
		r.Detail = &Timing{RFact: v[0], PFact: v[1], MxSwp: v[2], Update: v[3], LaSwp: v[4], UpTrSv: v[5]}
	}

	if thresh <= 0 {
		return r, m, nil
	}
	if m.Info != 0 {
		r.Skipped, r.Info = true, m.Info
		return r, m, nil
	}
	r.Checked = true
	m.Generate(g, seed)
	if err := residual(g, m, r); err != nil {
		return nil, nil, err
	}
	r.Passed = r.Resid < thresh
	return r, m, nil
}

// residual computes ||Ax-b||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * N) with the
// regenerated A and b, and the norms netlib prints on failure.
func residual(g *Grid, m *Matrix, r *Result) error {
	n, nb, ld := m.N, m.NB, m.LD
	mp, nq := m.Mp, m.Nq
	// ||A||_oo: row sums over the process row, the largest over the column; ||A||_1 the other
	// way round.
	rows := make([]float64, max(mp, 1))
	cols := make([]float64, max(nq, 1))
	for j := range nq {
		col := m.A[j*ld : j*ld+mp]
		for i, v := range col {
			a := math.Abs(v)
			rows[i] += a
			cols[j] += a
		}
	}
	if err := collectives.Allreduce(g.Row, nil, rows[:mp], sumOp); err != nil {
		return err
	}
	if err := collectives.Allreduce(g.Col, nil, cols[:nq], sumOp); err != nil {
		return err
	}
	normI, norm1 := 0.0, 0.0
	for _, v := range rows[:mp] {
		normI = math.Max(normI, v)
	}
	for _, v := range cols[:nq] {
		norm1 = math.Max(norm1, v)
	}
	var err error
	if r.AnormI, err = allMax(g.All, normI); err != nil {
		return err
	}
	if r.Anorm1, err = allMax(g.All, norm1); err != nil {
		return err
	}
	// ||x||: x is replicated down process columns, so reduce along a process row.
	xi, x1 := 0.0, 0.0
	for _, v := range m.X {
		xi = math.Max(xi, math.Abs(v))
		x1 += math.Abs(v)
	}
	if r.XnormI, err = allMax(g.Row, xi); err != nil {
		return err
	}
	if r.Xnorm1, err = allSum(g.Row, x1); err != nil {
		return err
	}
	// ||b||_oo, and r = b - A x summed onto process column 0.
	bcol := g2p(n, nb, g.Q)
	b := m.A[nq*ld : nq*ld+mp]
	bi := 0.0
	if g.MyCol == bcol {
		for _, v := range b {
			bi = math.Max(bi, math.Abs(v))
		}
	}
	if r.BnormI, err = allMax(g.All, bi); err != nil {
		return err
	}
	res := make([]float64, max(mp, 1))
	if g.MyCol == bcol {
		copy(res, b)
	}
	if mp > 0 && nq > 0 {
		linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, mp, 1, nq, -1, m.A, ld, m.X, max(nq, 1), 1, res, max(mp, 1))
	}
	if mp > 0 {
		if err := reduceSumTo(g.Row, res[:mp], 0, collectives.Options{}); err != nil {
			return err
		}
	}
	ri := 0.0
	if g.MyCol == 0 {
		for _, v := range res[:mp] {
			ri = math.Max(ri, math.Abs(v))
		}
	}
	if r.Resid0, err = allMax(g.All, ri); err != nil {
		return err
	}
	if n > 0 {
		r.Resid = r.Resid0 / (Eps * (r.AnormI*r.XnormI + r.BnormI) * float64(n))
	}
	return nil
}
