package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyDat = `HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
2            # of problems sizes (N)
40 57        Ns
1            # of NBs
8            NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
`

func writeDat(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "HPL.dat")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunDatAndJSON(t *testing.T) {
	dat := writeDat(t, tinyDat)
	js := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	if code := run([]string{"--dat", dat, "--json", js}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"HPLinpack 2.3", "WR11C2R4          40     8     1     1",
		"WR11C2R4          57     8     1     1", "Finished      2 tests with the following results:",
		"2 tests completed and passed residual checks,"} {
		if !strings.Contains(s, want) {
			t.Fatalf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "...... PASSED") != 2 {
		t.Fatalf("want 2 PASSED lines:\n%s", s)
	}
	var rep jsonReport
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Passed != 2 || rep.Results[1].N != 57 || !rep.Results[1].Passed ||
		rep.Results[1].Variant != "WR11C2R4" || rep.Results[0].Resid <= 0 {
		t.Fatalf("json report %+v", rep)
	}
}

// An N too large for the machine (10^7: 800 TB) is skipped with netlib's message, the next
// test runs and passes, and hpl exits 0, as netlib does.
func TestTooLargeNSkipped(t *testing.T) {
	dat := writeDat(t, strings.Replace(tinyDat, "40 57        Ns", "10000000 60  Ns", 1))
	js := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	if code := run([]string{"--dat", dat, "--json", js}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"HPL ERROR from process # 0, in function HPL_pdtest:\n>>> [0,0] Memory allocation failed for A, x and b. Skip. <<<\n",
		"WR11C2R4          60     8     1     1", "Finished      2 tests with the following results:",
		"1 tests completed and passed residual checks,", "1 tests skipped because of illegal input values.",
	} {
		if !strings.Contains(s, want) {
			t.Fatalf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "...... PASSED") != 1 || errb.Len() != 0 {
		t.Fatalf("output:\n%s\nstderr: %s", s, errb.String())
	}
	var rep jsonReport
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Skipped != 1 || rep.Passed != 1 || !rep.Results[0].Skipped ||
		rep.Results[0].N != 10000000 || rep.Results[1].Skipped || !rep.Results[1].Passed {
		t.Fatalf("json report %+v", rep)
	}
}

func TestQuickFlagsOverrideDat(t *testing.T) {
	dat := writeDat(t, tinyDat)
	var out, errb bytes.Buffer
	if code := run([]string{"--dat", dat, "-N", "33", "--nb", "5"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "WR11C2R4          33     5     1     1") ||
		strings.Count(out.String(), "PASSED") != 1 {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestTooFewRanks(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-N", "10", "-P", "2", "-Q", "2"}, &out, &errb)
	if code == 0 {
		t.Fatal("2x2 grid on one rank: exit 0")
	}
	if !strings.Contains(errb.String(), ">>> Need at least 4 processes for these tests <<<") {
		t.Fatalf("stderr: %s", errb.String())
	}
}

func TestBadDat(t *testing.T) {
	dat := writeDat(t, strings.Replace(tinyDat, "40 57        Ns", "40 fifty", 1))
	var out, errb bytes.Buffer
	if code := run([]string{"--dat", dat}, &out, &errb); code == 0 {
		t.Fatal("malformed HPL.dat: exit 0")
	}
	if !strings.Contains(errb.String(), `HPL.dat:6: expected an integer for N, found "fifty"`) {
		t.Fatalf("stderr: %s", errb.String())
	}
	if code := run([]string{"--dat", filepath.Join(t.TempDir(), "none.dat")}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "cannot open file") {
		t.Fatalf("missing file: exit %d, stderr %s", code, errb.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--nb", "0"}, {"-N", "-3"}, {"-P", "0"}, {"extra"}, {"--bogus"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestOutputToFile(t *testing.T) {
	dir := t.TempDir()
	outPath := filepath.Join(dir, "res.out")
	dat := writeDat(t, strings.Replace(strings.Replace(tinyDat, "HPL.out ", outPath+" ", 1),
		"6            device", "8            device", 1))
	var out, errb bytes.Buffer
	if code := run([]string{"--dat", dat, "-N", "20"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "PASSED") || out.Len() != 0 {
		t.Fatalf("file output %q, stdout %q", b, out.String())
	}
}

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	f := progressLine(&b)
	f(3, 10)
	if !strings.Contains(b.String(), "\r\033[Khpl: panel 3/10 (66%)") {
		t.Fatalf("progress %q", b.String())
	}
	f(4, 10) // within 200 ms of the last line: not redrawn
	if strings.Contains(b.String(), "panel 4/10") {
		t.Fatalf("redrawn too often: %q", b.String())
	}
	f(10, 10)
	if !strings.HasSuffix(b.String(), "\r\033[K") {
		t.Fatalf("line not cleared at the end: %q", b.String())
	}
}
