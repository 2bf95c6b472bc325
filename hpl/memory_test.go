package hpl

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/linalg"
)

const noMemoryMsg = ">>> [0,0] Memory allocation failed for A, x and b. Skip. <<<"

// A test too large for any machine (N = 10^7 is 800 TB) is skipped with netlib's message on
// every grid, before the table's head, and the others run; the summary counts it as skipped.
func TestDriverSkipsTooLarge(t *testing.T) {
	p, err := ParseDat(strings.NewReader(smokeDat), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	p.Ns, p.NBs, p.Ps, p.Qs = []int{10_000_000, 40}, []int{8}, []int{1, 2}, []int{1, 2}
	p.PFacts, p.RFacts, p.NBMins = []Fact{Right}, []Fact{Crout}, []int{4}
	var outs [4]bytes.Buffer
	var sums [4]Summary
	err = comm.Run(4, func(c *comm.Comm) error {
		d := &Driver{Params: p, Out: &outs[c.Rank()], ErrOut: &outs[c.Rank()]}
		s, err := d.Run(c)
		sums[c.Rank()] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := outs[0].String()
	if sums[0] != (Summary{Pass: 2, Skip: 2, Checked: true}) {
		t.Fatalf("summary %+v, want 2 passed and 2 skipped:\n%s", sums[0], s)
	}
	want := "HPL ERROR from process # 0, in function HPL_pdtest:\n" + noMemoryMsg + "\n\n"
	if strings.Count(s, want) != 2 || strings.Count(s, "...... PASSED") != 2 ||
		!strings.Contains(s, "2 tests skipped because of illegal input values.") {
		t.Fatalf("output:\n%s", s)
	}
	// netlib's order: skip 1x1 N=10^7, 1x1 N=40, skip 2x2 N=10^7, 2x2 N=40.
	at := func(sub string, from int) int {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			t.Fatalf("no %q after offset %d in:\n%s", sub, from, s)
		}
		return from + i
	}
	i := at(want, 0)
	if h := strings.Index(s, "T/V                N"); h < i {
		t.Fatalf("table head before the first skip:\n%s", s)
	}
	i = at("C2R4          40     8     1     1", i)
	i = at(want, i)
	at("C2R4          40     8     2     2", i)
}

// withAvailable runs f with availableMemory reporting has bytes.
func withAvailable(has uint64, f func()) {
	saved := availableMemory
	availableMemory = func() (uint64, bool) { return has, true }
	defer func() { availableMemory = saved }()
	f()
}

// The needs of the processes on one host are summed: 4 inproc ranks (one host) skip a test
// that one of them alone could hold, every rank with the same verdict, and run it when the
// host has their sum.
func TestMemoryCheckSumsHost(t *testing.T) {
	const n, nb = 120, 8
	algo := defaultAlgo()
	total := 0.0
	for r := range 4 {
		total += testNeed(n, nb, 2, 2, r/2, r%2, algo)
	}
	run := func(has uint64) [4]*Result {
		var res [4]*Result
		withAvailable(has, func() {
			err := comm.Run(4, func(c *comm.Comm) error {
				g, err := NewGrid(c, RowMajor, 2, 2)
				if err != nil {
					return err
				}
				res[c.Rank()], _, err = RunTest(g, algo, n, nb, 16, Options{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		return res
	}
	for _, r := range run(uint64(total) - 1) {
		if !r.NoMemory || r.Need != total || r.Have != total-1 || r.Time != 0 {
			t.Fatalf("host has %v of %v: %+v", total-1, total, r)
		}
	}
	if total/4 >= total-1 {
		t.Fatalf("one rank's need %v is not below the host's %v", total/4, total-1)
	}
	for _, r := range run(uint64(total)) {
		if r.NoMemory || !r.Passed {
			t.Fatalf("host has all %v: %+v", total, r)
		}
	}
}

// testNeed bounds what the solve allocates (the matrix, x and every solver buffer after the
// solve), over grids, depths, swaps, panel layouts, ragged and single blocks, and is less
// than twice that at N = 300 (where U's buffer and the row scratch are most of the rest).
func TestNeedBoundsAllocations(t *testing.T) {
	sizes := [][2]int{{57, 5}, {40, 64}, {96, 16}, {300, 32}}
	for _, layout := range []func(int, int) int{panelLayout, func(int, int) int { return 0 }} {
		for _, gr := range [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 3}} {
			for _, depth := range []int{0, 1, 3} {
				for _, sw := range []Swap{SwapBinExch, SwapLong} {
					for _, sz := range sizes {
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
								if err := s.solve(m); err != nil {
									return err
								}
								used := cap(m.A) + cap(m.X) + cap(s.factorBuf) + cap(s.ubuf) + cap(s.rowBuf) +
									cap(s.diagBuf) + cap(s.pivBuf)
								for _, b := range s.panelBufs {
									used += cap(b)
								}
								bytes := 8 * float64(used)
								need := testNeed(sz[0], sz[1], gr[0], gr[1], g.MyRow, g.MyCol, a) -
									float64(linalg.ReservedBytes())
								if need < bytes {
									return fmt.Errorf("rank %d: need %v bytes, the solve holds %v", c.Rank(), need, bytes)
								}
								if sz[0] >= 300 && need > 2*bytes {
									return fmt.Errorf("rank %d: need %v bytes, the solve holds only %v", c.Rank(), need, bytes)
								}
								return nil
							})
							if err != nil {
								t.Fatalf("%dx%d depth %d swap %d N=%d NB=%d packed=%v: %v", gr[0], gr[1], depth,
									sw, sz[0], sz[1], layout(0, sz[1]) > 0, err)
							}
						})
					}
				}
			}
		}
	}
}

// Sizes from HPL.dat that no machine holds, or that overflow an int, are skipped, never a
// panic; an NB wider than the matrix or a DEPTH deeper than its panels solves as usual.
func TestRunTestExtremeSizes(t *testing.T) {
	cases := []struct {
		n, nb, depth, align int
		skip                bool
	}{
		{math.MaxInt, 1, 1, 8, true},
		{math.MaxInt / 2, math.MaxInt, 1, 8, true},
		{1 << 40, 1 << 20, 1, 8, true},
		{30, 4, 1, math.MaxInt / 2, true},
		{30, 4, 1, 1 << 61, true},
		{30, math.MaxInt, 1, 8, false},
		{30, 1 << 40, 1, 8, false},
		{30, 4, math.MaxInt, 8, false},
		{30, 4, 1 << 40, 8, false},
	}
	for _, gr := range [][2]int{{1, 1}, {2, 2}} {
		for _, tc := range cases {
			err := comm.Run(gr[0]*gr[1], func(c *comm.Comm) error {
				g, err := NewGrid(c, RowMajor, gr[0], gr[1])
				if err != nil {
					return err
				}
				a := defaultAlgo()
				a.Depth, a.Align = tc.depth, tc.align
				r, _, err := RunTest(g, a, tc.n, tc.nb, 16, Options{})
				if err != nil {
					return err
				}
				if r.NoMemory != tc.skip || (!tc.skip && !r.Passed) || r.NB != tc.nb {
					return fmt.Errorf("rank %d: %+v", c.Rank(), r)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%dx%d %+v: %v", gr[0], gr[1], tc, err)
			}
		}
	}
}

func TestLeadingDimAndGridSize(t *testing.T) {
	for _, tc := range []struct{ mp, align, ld int }{
		{0, 8, 24}, {8, 8, 24}, {100, 8, 104}, {128, 8, 136}, {1, 4, 12}, {1000, 1, 1000}, {1024, 1, 1025},
	} {
		// a multiple of align, at least mp, not a power of two
		if ld, ok := leadingDim(tc.mp, tc.align); !ok || ld != tc.ld {
			t.Fatalf("leadingDim(%d, %d) = %d, %v; want %d", tc.mp, tc.align, ld, ok, tc.ld)
		}
	}
	if _, ok := leadingDim(math.MaxInt-3, 8); ok {
		t.Fatal("leadingDim near MaxInt did not report the overflow")
	}
	if _, ok := leadingDim(5, 1<<62); ok {
		t.Fatal("leadingDim with align 2^62 did not report the overflow")
	}
	p := &Params{Ps: []int{2, 1 << 32}, Qs: []int{3, 1 << 32}}
	if p.MaxProcs() != math.MaxInt {
		t.Fatalf("MaxProcs of an overflowing grid = %d", p.MaxProcs())
	}
	err := comm.Run(2, func(c *comm.Comm) error {
		if _, err := NewGrid(c, RowMajor, 1<<32, 1<<32); err == nil {
			return fmt.Errorf("a 2^32 x 2^32 grid on 2 ranks was accepted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
