package hpl

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"gonum.org/v1/gonum/mat"
)

// solveOn runs one test on a P x Q grid of inproc ranks and returns rank 0's result and the
// assembled global solution.
func solveOn(t *testing.T, P, Q, n, nb int, algo Algo) (*Result, []float64) {
	t.Helper()
	var (
		mu  sync.Mutex
		res *Result
		x   = make([]float64, n)
	)
	err := comm.Run(P*Q, func(c *comm.Comm) error {
		g, err := NewGrid(c, algo.Order, P, Q)
		if err != nil {
			return err
		}
		r, m, err := RunTest(g, algo, n, nb, 16, Options{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if c.Rank() == 0 {
			res = r
		} else if res != nil && (r.Resid != res.Resid || r.Passed != res.Passed) {
			return fmt.Errorf("rank %d result %+v differs from rank 0's %+v", c.Rank(), r, res)
		}
		if g.MyRow == 0 {
			for jl, v := range m.X {
				x[l2g(jl, nb, g.MyCol, Q)] = v
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, x
}

func defaultAlgo() Algo {
	return Algo{PFact: Right, RFact: Crout, NBMin: 4, NDiv: 2, BCast: Ring1M, Depth: 1, Swap: SwapMix,
		SwapThr: 64, Align: 8, Equil: true}
}

func TestSolveSmall(t *testing.T) {
	r, _ := solveOn(t, 1, 1, 20, 4, defaultAlgo())
	if !r.Passed {
		t.Fatalf("residual %v: FAILED", r.Resid)
	}
	t.Logf("resid %v", r.Resid)
}

// gonumSolve solves HPL's system of order n with gonum's LU.
func gonumSolve(t *testing.T, n int) []float64 {
	a := make([]float64, n*(n+1))
	MatGen(n, n+1, 8, 1, 1, 0, 0, a, n, Seed)
	A := mat.NewDense(n, n, nil)
	b := mat.NewVecDense(n, nil)
	for i := range n {
		for j := range n {
			A.Set(i, j, a[i+j*n])
		}
		b.SetVec(i, a[i+n*n])
	}
	var lu mat.LU
	lu.Factorize(A)
	var x mat.VecDense
	if err := lu.SolveVecTo(&x, false, b); err != nil {
		t.Fatal(err)
	}
	return x.RawVector().Data
}

func TestSolveMatchesGonum(t *testing.T) {
	for i, c := range []struct{ P, Q, n, nb int }{{1, 1, 37, 5}, {2, 2, 50, 4}, {2, 3, 61, 3}, {3, 1, 45, 7}} {
		a := defaultAlgo()
		a.Depth = i % 3 // 0, 1 and 2
		a.BCast = Topo(i + 2)
		r, x := solveOn(t, c.P, c.Q, c.n, c.nb, a)
		want := gonumSolve(t, c.n)
		for i := range want {
			if math.Abs(x[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%+v: x[%d] = %v, gonum %v", c, i, x[i], want[i])
			}
		}
		if !r.Passed {
			t.Fatalf("%+v: residual %v", c, r.Resid)
		}
	}
}
