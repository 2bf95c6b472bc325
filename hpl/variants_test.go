package hpl

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

var testGrids = [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 3}, {3, 1}, {2, 3}}

// runMany runs many tests on one P x Q grid of inproc ranks and fails on any residual that
// does not pass.
func runMany(t *testing.T, P, Q int, order Order, tests []Case) {
	t.Helper()
	err := comm.Run(P*Q, func(c *comm.Comm) error {
		g, err := NewGrid(c, order, P, Q)
		if err != nil {
			return err
		}
		for _, cs := range tests {
			r, _, err := RunTest(g, cs.Algo, cs.N, cs.NB, 16, Options{})
			if err != nil {
				return fmt.Errorf("%s N=%d NB=%d: %w", cs.Algo.Code(), cs.N, cs.NB, err)
			}
			if !r.Passed && cs.N > 0 {
				return fmt.Errorf("%dx%d %s N=%d NB=%d swap %d: residual %v FAILED", P, Q, r.Variant,
					cs.N, cs.NB, cs.Algo.Swap, r.Resid)
			}
			if cs.N == 0 && r.Resid != 0 {
				return fmt.Errorf("N=0: residual %v", r.Resid)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every BCAST, DEPTH and SWAP variant on every grid, with sizes that leave ragged last
// blocks, a single block (NB > N), one column, and N = 0.
func TestCommVariantsAllGrids(t *testing.T) {
	sizes := [][2]int{{0, 4}, {1, 3}, {2, 1}, {7, 9}, {29, 4}, {57, 5}}
	if testing.Short() {
		sizes = [][2]int{{1, 3}, {29, 4}}
	}
	for _, gr := range testGrids {
		t.Run(fmt.Sprintf("%dx%d", gr[0], gr[1]), func(t *testing.T) {
			var tests []Case
			for top := Ring1; top <= LongM; top++ {
				for depth := 0; depth <= 2; depth++ {
					for sw := SwapBinExch; sw <= SwapMix; sw++ {
						for _, s := range sizes {
							a := defaultAlgo()
							a.BCast, a.Depth, a.Swap, a.SwapThr = top, depth, sw, 3
							tests = append(tests, Case{N: s[0], NB: s[1], Algo: a})
						}
					}
				}
			}
			runMany(t, gr[0], gr[1], RowMajor, tests)
		})
	}
}

// Every PFACT x RFACT x NBMIN x NDIV combination, on a grid with several process rows (the
// pivot search crosses processes), on one process, and on one process row (local pivot
// search, panel broadcast along the row).
func TestFactVariants(t *testing.T) {
	for _, gr := range [][2]int{{1, 1}, {3, 2}, {1, 3}} {
		var tests []Case
		for pf := Left; pf <= Right; pf++ {
			for rf := Left; rf <= Right; rf++ {
				for _, nbmin := range []int{1, 2, 4} {
					for _, ndiv := range []int{2, 3} {
						for _, s := range [][2]int{{45, 16}, {70, 13}} {
							a := defaultAlgo()
							a.PFact, a.RFact, a.NBMin, a.NDiv = pf, rf, nbmin, ndiv
							tests = append(tests, Case{N: s[0], NB: s[1], Algo: a})
						}
					}
				}
			}
		}
		runMany(t, gr[0], gr[1], RowMajor, tests)
	}
}

// Column-major process mapping and larger systems.
func TestLargerSystems(t *testing.T) {
	cases := []struct {
		P, Q, n, nb int
		order       Order
	}{
		{2, 2, 300, 32, ColumnMajor},
		{2, 3, 500, 24, RowMajor},
		{1, 2, 1000, 64, RowMajor},
		{2, 2, 1500, 96, RowMajor},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for _, c := range cases {
		a := defaultAlgo()
		runMany(t, c.P, c.Q, c.order, []Case{{N: c.n, NB: c.nb, Algo: a}})
		a.Depth, a.BCast, a.Swap, a.PFact, a.RFact = 0, Long, SwapLong, Left, Left
		runMany(t, c.P, c.Q, c.order, []Case{{N: c.n, NB: c.nb, Algo: a}})
	}
}

// Every size from 1 to 40 on a 2x3 grid with a small block: each possible ragged edge.
func TestEverySmallSize(t *testing.T) {
	var tests []Case
	for n := 1; n <= 40; n++ {
		tests = append(tests, Case{N: n, NB: 3, Algo: defaultAlgo()})
	}
	runMany(t, 2, 3, RowMajor, tests)
}

// A singular system is reported (netlib skips the test), not a hang or a wrong PASSED.
func TestSingularMatrix(t *testing.T) {
	err := comm.Run(4, func(c *comm.Comm) error {
		g, err := NewGrid(c, RowMajor, 2, 2)
		if err != nil {
			return err
		}
		m := NewMatrix(g, 12, 2, 8)
		m.Generate(g, Seed)
		// Column 5 zero everywhere.
		if g.MyCol == g2p(5, 2, 2) {
			lc := g2l(5, 2, 2)
			for i := range m.Mp {
				m.A[i+lc*m.LD] = 0
			}
		}
		if err := Solve(g, defaultAlgo(), m, nil); err != nil {
			return err
		}
		if m.Info != 6 {
			return fmt.Errorf("rank %d: info %d, want 6", c.Rank(), m.Info)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Ranks beyond P x Q get no grid and take no part.
func TestIdleRanks(t *testing.T) {
	err := comm.Run(5, func(c *comm.Comm) error {
		g, err := NewGrid(c, RowMajor, 2, 2)
		if err != nil {
			return err
		}
		if (g == nil) != (c.Rank() == 4) {
			return fmt.Errorf("rank %d: grid %v", c.Rank(), g)
		}
		if g == nil {
			return nil
		}
		r, _, err := RunTest(g, defaultAlgo(), 30, 4, 16, Options{})
		if err != nil {
			return err
		}
		if !r.Passed {
			return fmt.Errorf("residual %v", r.Resid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = comm.Run(2, func(c *comm.Comm) error {
		_, err := NewGrid(c, RowMajor, 2, 2)
		if err == nil {
			return fmt.Errorf("2x2 grid on 2 ranks accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Deeper look-ahead than the window of panels there is, and than one.
func TestDeepLookahead(t *testing.T) {
	var tests []Case
	for _, depth := range []int{2, 3, 5} {
		for _, s := range [][2]int{{10, 4}, {61, 4}, {100, 7}} {
			a := defaultAlgo()
			a.Depth = depth
			tests = append(tests, Case{N: s[0], NB: s[1], Algo: a})
		}
	}
	runMany(t, 2, 3, RowMajor, tests)
	runMany(t, 1, 1, RowMajor, tests)
}

// A rank that dies mid-run makes the others fail with an error naming it, not hang.
func TestPeerFailureNoHang(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- comm.Run(4, func(c *comm.Comm) error {
			g, err := NewGrid(c, RowMajor, 2, 2)
			if err != nil {
				return err
			}
			if c.Rank() == 3 {
				return fmt.Errorf("rank 3 gives up")
			}
			_, _, err = RunTest(g, defaultAlgo(), 200, 8, 16, Options{})
			if err == nil {
				return fmt.Errorf("rank %d: solve succeeded without rank 3", c.Rank())
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "rank 3 gives up") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ranks hang after a peer failed")
	}
}

// withPanelLayout runs f with panelLayout replaced by layout.
func withPanelLayout(layout func(rank, nb int) int, f func()) {
	saved := panelLayout
	panelLayout = layout
	defer func() { panelLayout = saved }()
	f()
}

// TestAgreePacking: panels are packed only when every rank can pack them and all in the
// same layout.
func TestAgreePacking(t *testing.T) {
	for _, tc := range []struct {
		layouts []int
		want    bool
	}{
		{[]int{24}, true},
		{[]int{24, 24, 24}, true},
		{[]int{24, 8, 24}, false},
		{[]int{8, 24}, false},
		{[]int{24, 24, 0}, false},
		{[]int{0, 0}, false},
	} {
		err := comm.Run(len(tc.layouts), func(c *comm.Comm) error {
			got, err := agreePacking(c, tc.layouts[c.Rank()])
			if err != nil {
				return err
			}
			if got != tc.want {
				return fmt.Errorf("rank %d: agreePacking = %v, want %v", c.Rank(), got, tc.want)
			}
			return nil
		})
		if err != nil {
			t.Errorf("layouts %v: %v", tc.layouts, err)
		}
	}
}

// TestUnpackedPanels covers the panels that travel column-major (no packed layout, or ranks
// that disagree on it) over every BCAST and SWAP variant and both look-ahead depths, and
// checks that they give the packed panels' solution.
func TestUnpackedPanels(t *testing.T) {
	own := panelLayout
	mixed := func(rank, nb int) int {
		if rank == 1 {
			return own(rank, nb) + 1 // another CPU's layout
		}
		return own(rank, nb)
	}
	none := func(int, int) int { return 0 }
	for _, gr := range [][2]int{{1, 2}, {2, 2}, {2, 3}} {
		t.Run(fmt.Sprintf("%dx%d", gr[0], gr[1]), func(t *testing.T) {
			var tests []Case
			for top := Ring1; top <= LongM; top++ {
				for depth := 0; depth <= 1; depth++ {
					for sw := SwapBinExch; sw <= SwapMix; sw++ {
						a := defaultAlgo()
						a.BCast, a.Depth, a.Swap, a.SwapThr = top, depth, sw, 3
						tests = append(tests, Case{N: 57, NB: 5, Algo: a})
					}
				}
			}
			withPanelLayout(none, func() { runMany(t, gr[0], gr[1], RowMajor, tests) })
			withPanelLayout(mixed, func() { runMany(t, gr[0], gr[1], RowMajor, tests[:3]) })
		})
	}
	// The same system solved with panels packed and column-major.
	solve := func() [][]float64 {
		xs := make([][]float64, 4)
		err := comm.Run(4, func(c *comm.Comm) error {
			g, err := NewGrid(c, RowMajor, 2, 2)
			if err != nil {
				return err
			}
			_, m, err := RunTest(g, defaultAlgo(), 300, 32, 16, Options{})
			if err != nil {
				return err
			}
			xs[c.Rank()] = m.X
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}
	packed := solve()
	var unpacked [][]float64
	withPanelLayout(none, func() { unpacked = solve() })
	for r := range packed {
		for i := range packed[r] {
			if d := math.Abs(packed[r][i] - unpacked[r][i]); d > 1e-9*(1+math.Abs(packed[r][i])) {
				t.Fatalf("rank %d x[%d]: packed %v, column-major %v", r, i, packed[r][i], unpacked[r][i])
			}
		}
	}
}

// TestWorkspaceReserved: newSolver allocates every buffer the solve needs (the timed solve
// must not allocate its workspace), over grids, variants, ragged and single blocks, with
// packed and column-major panels.
func TestWorkspaceReserved(t *testing.T) {
	same := func(a, b []float64) bool {
		return cap(a) == cap(b) && (cap(a) == 0 || &a[:1][0] == &b[:1][0])
	}
	for _, layout := range []func(int, int) int{panelLayout, func(int, int) int { return 0 }} {
		for _, gr := range [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 2}} {
			for _, depth := range []int{0, 1, 2} {
				for _, sw := range []Swap{SwapBinExch, SwapLong} {
					for _, sz := range [][2]int{{57, 5}, {40, 64}, {96, 16}} {
						withPanelLayout(layout, func() {
							err := comm.Run(gr[0]*gr[1], func(c *comm.Comm) error {
								g, err := NewGrid(c, RowMajor, gr[0], gr[1])
								if err != nil {
									return err
								}
								a := defaultAlgo()
								a.Depth, a.Swap = depth, sw
								m := NewMatrix(g, sz[0], sz[1], a.Align)
								m.Generate(g, Seed)
								s, err := newSolver(g, a, m, nil)
								if err != nil {
									return err
								}
								panels := append([][]float64(nil), s.panelBufs...)
								factor, ubuf := s.factorBuf, s.ubuf
								if err := s.solve(m); err != nil {
									return err
								}
								for i := range panels {
									if !same(panels[i], s.panelBufs[i]) {
										return fmt.Errorf("rank %d: panel slot %d grew during the solve", c.Rank(), i)
									}
								}
								if !same(factor, s.factorBuf) || !same(ubuf, s.ubuf) {
									return fmt.Errorf("rank %d: factorization workspace or U's buffer grew during the solve", c.Rank())
								}
								return nil
							})
							if err != nil {
								t.Fatalf("%dx%d depth %d swap %d N=%d NB=%d packed=%v: %v", gr[0], gr[1], depth, sw, sz[0], sz[1], layout(0, sz[1]) > 0, err)
							}
						})
					}
				}
			}
		}
	}
}
