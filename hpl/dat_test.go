package hpl

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

const smokeDat = `HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
4            # of problems sizes (N)
29 30 34 35  Ns
4            # of NBs
1 2 3 4      NBs
0            PMAP process mapping (0=Row-,1=Column-major)
3            # of process grids (P x Q)
2 1 4        Ps
2 4 1        Qs
16.0         threshold
3            # of panel fact
0 1 2        PFACTs (0=left, 1=Crout, 2=Right)
2            # of recursive stopping criterium
2 4          NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
3            # of recursive panel fact.
0 1 2        RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
0            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
0            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
`

func TestParseDatSmoke(t *testing.T) {
	p, err := ParseDat(strings.NewReader(smokeDat), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	eq := func(name string, got, want []int) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s = %v, want %v", name, got, want)
			}
		}
	}
	eq("Ns", p.Ns, []int{29, 30, 34, 35})
	eq("NBs", p.NBs, []int{1, 2, 3, 4})
	eq("Ps", p.Ps, []int{2, 1, 4})
	eq("Qs", p.Qs, []int{2, 4, 1})
	eq("NBMins", p.NBMins, []int{2, 4})
	eq("NDivs", p.NDivs, []int{2})
	eq("Depths", p.Depths, []int{0})
	if p.OutFile != "HPL.out" || p.Device != 6 || p.PMap != RowMajor || p.Threshold != 16 {
		t.Fatalf("header fields: %+v", p)
	}
	if len(p.PFacts) != 3 || p.PFacts[0] != Left || p.PFacts[1] != Crout || p.PFacts[2] != Right {
		t.Fatalf("PFacts = %v", p.PFacts)
	}
	if len(p.BCasts) != 1 || p.BCasts[0] != Ring1 || p.Swap != SwapMix || p.SwapThr != 64 {
		t.Fatalf("bcast/swap: %+v", p)
	}
	if p.L1NoTrans || p.UNoTrans || !p.Equil || p.Align != 8 {
		t.Fatalf("tail fields: %+v", p)
	}
	if p.MaxProcs() != 4 || p.Tests() != 4*4*3*3*2*3 {
		t.Fatalf("MaxProcs %d Tests %d", p.MaxProcs(), p.Tests())
	}
	if len(p.Cases()) != p.Tests() {
		t.Fatalf("Cases %d, Tests %d", len(p.Cases()), p.Tests())
	}
}

func TestParseDatSharedFiles(t *testing.T) {
	for _, f := range []string{"smoke.HPL.dat", "n12000-1x2.HPL.dat"} {
		path := testfiles.Path(t, "hpl", f)
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseDat(fh, f)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f == "n12000-1x2.HPL.dat" {
			c := p.Cases()
			if len(c) != 1 || c[0].N != 12000 || c[0].NB != 128 || c[0].P != 1 || c[0].Q != 2 ||
				c[0].Algo.Code() != "WR11C2R4" {
				t.Fatalf("%s: cases %+v", f, c)
			}
		}
	}
}

// replaceLine returns smokeDat with its 1-based line n replaced.
func replaceLine(n int, text string) string {
	lines := strings.Split(smokeDat, "\n")
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

func TestParseDatErrors(t *testing.T) {
	cut := strings.Join(strings.Split(smokeDat, "\n")[:12], "\n") + "\n"
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty", "", 1, "unexpected end of file"},
		{"truncated", cut, 13, "expected the residual threshold"},
		{"no N count", replaceLine(5, "x  # of problems"), 5, `expected an integer for the number of values of N, found "x"`},
		{"zero Ns", replaceLine(5, "0"), 5, "number of values of N is less than 1 or greater than 20"},
		{"21 Ns", replaceLine(5, "21"), 5, "greater than 20"},
		{"short N list", replaceLine(6, "29 30"), 6, "expected 4 values of N, found 2"},
		{"negative N", replaceLine(6, "29 -1 3 4"), 6, "value of N less than 0"},
		{"NB zero", replaceLine(8, "1 0 3 4"), 8, "value of NB less than 1"},
		{"P zero", replaceLine(11, "2 0 4"), 11, "value of P less than 1"},
		{"Q text", replaceLine(12, "2 four 1"), 12, `expected an integer for Q, found "four"`},
		{"threshold text", replaceLine(13, "sixteen"), 13, "expected a number for the residual threshold"},
		{"NDIV 1", replaceLine(19, "1"), 19, "value of NDIV less than 2"},
		{"NBMIN 0", replaceLine(17, "0 4"), 17, "value of NBMIN less than 1"},
		{"DEPTH -1", replaceLine(25, "-1"), 25, "value of DEPTH less than 0"},
		{"empty align", replaceLine(31, ""), 31, "expected the memory alignment in doubles, found an empty line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDat(strings.NewReader(c.in), "HPL.dat")
			var de *DatError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DatError", err)
			}
			if de.Line != c.line || !strings.Contains(de.Msg, c.msg) {
				t.Fatalf("err = %v, want line %d containing %q", err, c.line, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "HPL.dat:") {
				t.Fatalf("err = %v does not name the file", err)
			}
		})
	}
}

// Values netlib accepts and maps are mapped the same way.
func TestParseDatNetlibMappings(t *testing.T) {
	in := replaceLine(15, "0 1 7")
	in = strings.Replace(in, "0            BCASTs", "9            BCASTs", 1)
	in = strings.Replace(in, "2            SWAP", "5            SWAP", 1)
	in = strings.Replace(in, "64           swapping", "-3           swapping", 1)
	in = strings.Replace(in, "1            Equilibration", "4            Equilibration", 1)
	in = strings.Replace(in, "8            memory", "0            memory", 1)
	in = strings.Replace(in, "0            PMAP", "1            PMAP", 1)
	p, err := ParseDat(strings.NewReader(in), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	if p.PFacts[2] != Right || p.BCasts[0] != Ring1M || p.Swap != SwapLong || p.SwapThr != 0 ||
		!p.Equil || p.Align != 4 || p.PMap != ColumnMajor {
		t.Fatalf("mapped: %+v", p)
	}
}

func FuzzParseDat(f *testing.F) {
	f.Add(smokeDat)
	f.Add(replaceLine(6, "29 30"))
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseDat(strings.NewReader(in), "HPL.dat")
		if err != nil {
			var de *DatError
			if !errors.As(err, &de) && !strings.Contains(err.Error(), "HPL.dat") {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		// Whatever parses must describe a run that can be listed and printed.
		if len(p.Ps) != len(p.Qs) || len(p.Ns) < 1 || len(p.Ns) > MaxParam {
			t.Fatalf("inconsistent params %+v", p)
		}
		for _, nb := range p.NBs {
			if nb < 1 {
				t.Fatalf("NB %d accepted", nb)
			}
		}
		var sb strings.Builder
		if err := WriteHeader(&sb, p); err != nil {
			t.Fatal(err)
		}
	})
}
