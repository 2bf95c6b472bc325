package hpl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// Every test of netlib's smoke run (every PFACT, RFACT, NBMIN, grids 2x2, 1x4, 4x1, N 29-35,
// NB 1-4) passes here too, on the same matrices, with residuals of netlib's magnitude.
func TestSmokeAgainstNetlib(t *testing.T) {
	p, err := ParseDat(strings.NewReader(readShared(t, "smoke.HPL.dat")), "smoke.HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	run := parseNetlibOut(t, readShared(t, "smoke.netlib-2.3.out"))
	cases := p.Cases()
	results := make([]*Result, len(cases))
	err = comm.Run(p.MaxProcs(), func(c *comm.Comm) error {
		var g *Grid
		for i, cs := range cases {
			if i == 0 || cs.P != cases[i-1].P || cs.Q != cases[i-1].Q {
				if g, err = NewGrid(c, p.PMap, cs.P, cs.Q); err != nil {
					return err
				}
			}
			if g == nil {
				continue
			}
			r, _, err := RunTest(g, cs.Algo, cs.N, cs.NB, p.Threshold, Options{})
			if err != nil {
				return err
			}
			if c.Rank() == 0 {
				results[i] = r
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i, r := range results {
		want := run.results[i]
		if r.Variant != want.Variant || !r.Passed {
			t.Fatalf("test %d: %s N=%d NB=%d: resid %v passed %v (netlib %s %v)", i, r.Variant, r.N, r.NB,
				r.Resid, r.Passed, want.Variant, want.Resid)
		}
		if ratio := r.Resid / want.Resid; ratio < 0.1 || ratio > 10 {
			t.Errorf("test %d: %s N=%d NB=%d %dx%d: resid %.8e, netlib %.8e", i, r.Variant, r.N, r.NB, r.P, r.Q,
				r.Resid, want.Resid)
		}
		if fmtResid(r.Resid) == fmtResid(want.Resid) {
			same++
		}
	}
	t.Logf("%d of %d residuals equal netlib's to the 9 printed digits", same, len(results))
}

func fmtResid(v float64) string { return fmt.Sprintf("%16.8e", v) }
