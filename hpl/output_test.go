package hpl

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// netlibRun is a netlib HPL output file split into its header, test blocks and summary.
type netlibRun struct {
	header  string
	results []Result
	summary string
}

// parseNetlibOut reads the results back from netlib's output: the numbers we re-render with
// our writer, which must give the file's bytes.
func parseNetlibOut(t *testing.T, text string) netlibRun {
	t.Helper()
	const head = lineEq + "\nT/V "
	i := strings.Index(text, head)
	if i < 0 {
		t.Fatal("no T/V table in netlib output")
	}
	run := netlibRun{header: text[:i]}
	rest := text[i:]
	end := strings.Index(rest, lineEq+"\n\nFinished")
	if end < 0 {
		t.Fatal("no Finished summary in netlib output")
	}
	run.summary = rest[end:]
	if j := strings.Index(run.summary, "End of Tests.\n"+lineEq+"\n"); j >= 0 {
		run.summary = run.summary[:j+len("End of Tests.\n"+lineEq+"\n")]
	}
	for _, blk := range strings.Split(rest[:end], head)[1:] {
		lines := strings.Split(blk, "\n")
		// lines[0] is the rest of the T/V head, lines[1] dashes, lines[2] the row.
		var r Result
		if _, err := fmt.Sscanf(lines[2], "%s %d %d %d %d %f %e", &r.Variant, &r.N, &r.NB, &r.P, &r.Q,
			&r.Time, &r.Gflops); err != nil {
			t.Fatalf("row %q: %v", lines[2], err)
		}
		if r.Time == 0 {
			r.Time = 0.001 // printed "0.00": netlib prints a row only when the time is > 0
		}
		var err error
		r.Start, err = time.Parse(ctime, strings.TrimPrefix(lines[3], "HPL_pdgesv() start time "))
		if err != nil {
			t.Fatal(err)
		}
		r.End, err = time.Parse(ctime, strings.TrimPrefix(lines[5], "HPL_pdgesv() end time   "))
		if err != nil {
			t.Fatal(err)
		}
		var verdict string
		if _, err := fmt.Sscanf(strings.TrimPrefix(lines[8], "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= "),
			"%e ...... %s", &r.Resid, &verdict); err != nil {
			t.Fatalf("residual line %q: %v", lines[8], err)
		}
		r.Checked, r.Passed = true, verdict == "PASSED"
		run.results = append(run.results, r)
	}
	return run
}

func readShared(t *testing.T, name string) string {
	b, err := os.ReadFile(testfiles.Path(t, "hpl", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Our writer reproduces netlib's output line by line: header from the parsed HPL.dat, every
// test block from the numbers netlib printed, the summary from the counts; and the variant
// codes come out in netlib's order from our enumeration of the HPL.dat lists.
func TestOutputMatchesNetlib(t *testing.T) {
	for _, name := range []string{"smoke", "n12000-1x2"} {
		t.Run(name, func(t *testing.T) {
			p, err := ParseDat(strings.NewReader(readShared(t, name+".HPL.dat")), name+".HPL.dat")
			if err != nil {
				t.Fatal(err)
			}
			run := parseNetlibOut(t, readShared(t, name+".netlib-2.3.out"))
			var sb strings.Builder
			if err := WriteHeader(&sb, p); err != nil {
				t.Fatal(err)
			}
			compareLines(t, "header", sb.String(), run.header)

			cases := p.Cases()
			if len(cases) != len(run.results) {
				t.Fatalf("%d cases from HPL.dat, %d results in netlib output", len(cases), len(run.results))
			}
			var ours, theirs strings.Builder
			var s Summary
			s.Checked = true
			for i, c := range cases {
				r := run.results[i]
				if got := c.Algo.Code(); got != r.Variant || c.N != r.N || c.NB != r.NB || c.P != r.P || c.Q != r.Q {
					t.Fatalf("case %d: ours %s N=%d NB=%d %dx%d, netlib %s N=%d NB=%d %dx%d", i, got, c.N,
						c.NB, c.P, c.Q, r.Variant, r.N, r.NB, r.P, r.Q)
				}
				if r.Passed {
					s.Pass++
				} else {
					s.Fail++
				}
				WriteTableHead(&ours)
				WriteResult(&ours, &r)
			}
			theirs.WriteString(readShared(t, name+".netlib-2.3.out")[len(run.header):])
			WriteSummary(&ours, s)
			compareLines(t, "tests and summary", ours.String(), theirs.String()[:len(theirs.String())-len(trailer(theirs.String()))])
		})
	}
}

// trailer is what follows netlib's final "=====" line (the test harness's own note).
func trailer(s string) string {
	k := strings.LastIndex(s, "End of Tests.\n"+lineEq+"\n")
	return s[k+len("End of Tests.\n"+lineEq+"\n"):]
}

func compareLines(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s line %d:\n ours   %q\n netlib %q", what, i+1, g[i], w[i])
		}
	}
	if len(g) != len(w) {
		t.Fatalf("%s: %d lines, netlib %d", what, len(g), len(w))
	}
}

func TestGflopsFormula(t *testing.T) {
	// netlib's own figure: N=12000 in 9.59 s (rounded) printed as 1.2010e+02.
	if lo, hi := Gflops(12000, 9.595), Gflops(12000, 9.585); 120.10 < lo || 120.10 > hi {
		t.Fatalf("netlib's 120.10 Gflops is outside [%v, %v] for a time printed as 9.59", lo, hi)
	}
	n, tm := 1000.0, 2.0
	want := (2.0/3.0*n*n*n + 1.5*n*n) / tm / 1e9
	if got := Gflops(1000, tm); (got-want)/want > 1e-14 || (want-got)/want > 1e-14 {
		t.Fatalf("Gflops = %v, want %v", got, want)
	}
}

func TestWriteFailedAndUnchecked(t *testing.T) {
	r := Result{Variant: "WR00L2L2", N: 10, NB: 2, P: 1, Q: 1, Time: 1, Gflops: 1, Checked: true,
		Resid: 20, Resid0: 1, AnormI: 2, Anorm1: 3, XnormI: 4, Xnorm1: 5, BnormI: 6}
	var b strings.Builder
	WriteResult(&b, &r)
	if !strings.Contains(b.String(), "...... FAILED\n||Ax-b||_oo  . . . . . . . . . . . . . . . . . =           1.000000\n") ||
		!strings.Contains(b.String(), "||b||_oo . . . . . . . . . . . . . . . . . . . =           6.000000\n") {
		t.Fatalf("failed test output:\n%s", b.String())
	}
	b.Reset()
	WriteSummary(&b, Summary{Pass: 3})
	if !strings.Contains(b.String(), "Finished      3 tests with the following results:\n              3 tests completed without checking,\n") {
		t.Fatalf("unchecked summary:\n%s", b.String())
	}
}

// Lists longer than 8 wrap as netlib prints them: 8 per line, then 8, then the rest.
func TestHeaderWrapsLongLists(t *testing.T) {
	p, err := ParseDat(strings.NewReader(smokeDat), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	p.Ns = nil
	for i := 1; i <= 18; i++ {
		p.Ns = append(p.Ns, i*10)
	}
	p.BCasts = []Topo{Ring1, Ring1M, Ring2, Ring2M, Long, LongM, Ring1, Ring1, Ring2M}
	var b strings.Builder
	if err := WriteHeader(&b, p); err != nil {
		t.Fatal(err)
	}
	want := "\nN      :      10       20       30       40       50       60       70       80 " +
		"\n              90      100      110      120      130      140      150      160 " +
		"\n             170      180 \nNB     :"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("N list:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "\nBCAST  :   1ring   1ringM    2ring   2ringM    Blong   BlongM    1ring    1ring \n          2ringM \nDEPTH") {
		t.Fatalf("BCAST list:\n%s", b.String())
	}
}
