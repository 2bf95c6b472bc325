// Command hpl is the High-Performance Linpack benchmark, run as gorun ranks:
//
//	gorun -n 4 hpl                       # built-in default, or ./HPL.dat when present
//	gorun -n 2 hpl --dat my.HPL.dat      # netlib's HPL.dat format, output as netlib HPL 2.3
//	gorun -n 2 hpl -N 8000 --nb 192 -P 1 -Q 2 --json out.json
//
// Without a launcher it runs as a single rank. Package hpl holds the logic.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/hpl"
	"github.com/gorun-hpc/gorun/linalg"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type flags struct {
	dat       string
	n, nb     int
	p, q      int
	jsonPath  string
	noProgres bool
	nSet      bool // -N given (N = 0 is a legal, empty problem)
	threads   int
	detailed  bool
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	f := &flags{}
	fs := pflag.NewFlagSet("hpl", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.dat, "dat", "", "HPL.dat to read (default ./HPL.dat if present, else a built-in run)")
	fs.IntVarP(&f.n, "N", "N", 0, "problem size: run this one N instead of the HPL.dat list")
	fs.IntVar(&f.nb, "nb", 0, "block size: run this one NB instead of the HPL.dat list")
	fs.IntVarP(&f.p, "P", "P", 0, "process rows (with -Q, replaces the HPL.dat grids; alone, Q = ranks/P)")
	fs.IntVarP(&f.q, "Q", "Q", 0, "process columns (with -P; alone, P = ranks/Q)")
	fs.StringVar(&f.jsonPath, "json", "", "also write the results as JSON to this file (rank 0)")
	fs.BoolVar(&f.noProgres, "no-progress", false, "no progress line, even on a terminal")
	fs.BoolVar(&f.detailed, "detailed-timing", false, "print the time per phase after each test (netlib's HPL_DETAILED_TIMING)")
	fs.IntVar(&f.threads, "threads", 1, "goroutines per Dgemm call in each rank (HPL runs one BLAS thread per rank)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gorun -n RANKS hpl [flags]\n\nSolves a random dense system as netlib HPL 2.3 does and prints its output.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	f.nSet = fs.Changed("N")
	if f.n < 0 {
		return nil, fmt.Errorf("-N must be >= 0, got %d", f.n)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"nb", f.nb}, {"P", f.p}, {"Q", f.q}, {"threads", f.threads}} {
		if fs.Changed(c.name) && c.v < 1 {
			return nil, fmt.Errorf("--%s must be at least 1, got %d", c.name, c.v)
		}
	}
	return f, nil
}

// loadParams reads the HPL.dat (rank 0 only) or builds the default, then applies the flags.
func loadParams(f *flags, ranks int) (*hpl.Params, error) {
	var p *hpl.Params
	path := f.dat
	if path == "" {
		if _, err := os.Stat("HPL.dat"); err == nil {
			path = "HPL.dat"
		}
	}
	if path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("cannot open file %s: %w", path, err)
		}
		defer fh.Close()
		if p, err = hpl.ParseDat(fh, path); err != nil {
			return nil, err
		}
	} else {
		p = hpl.DefaultParams(ranks)
	}
	if f.nSet {
		p.Ns = []int{f.n}
	}
	if f.nb > 0 {
		p.NBs = []int{f.nb}
	}
	switch {
	case f.p > 0 && f.q > 0:
		p.Ps, p.Qs = []int{f.p}, []int{f.q}
	case f.p > 0:
		p.Ps, p.Qs = []int{f.p}, []int{max(1, ranks/f.p)}
	case f.q > 0:
		p.Ps, p.Qs = []int{max(1, ranks/f.q)}, []int{f.q}
	}
	return p, nil
}

type jsonResult struct {
	Variant string    `json:"variant"`
	N       int       `json:"n"`
	NB      int       `json:"nb"`
	P       int       `json:"p"`
	Q       int       `json:"q"`
	Time    float64   `json:"time_s"`
	Gflops  float64   `json:"gflops"`
	Resid   float64   `json:"residual"`
	Checked bool      `json:"checked"`
	Passed  bool      `json:"passed"`
	Skipped bool      `json:"skipped,omitempty"` // a singular matrix, or too large for memory
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
}

type jsonReport struct {
	Ranks   int          `json:"ranks"`
	Results []jsonResult `json:"results"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
}

func run(args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "hpl: %v\n", err)
		return 2
	}
	linalg.SetThreads(f.threads)
	world, err := comm.Init()
	if err != nil {
		fmt.Fprintf(stderr, "hpl: %v\n", err)
		return 1
	}
	code := runWorld(world, f, stdout, stderr)
	if err := world.Finalize(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "hpl: rank %d: %v\n", world.Rank(), err)
		code = 1
	}
	return code
}

func runWorld(world *comm.Comm, f *flags, stdout, stderr io.Writer) int {
	root := world.Rank() == 0
	var p *hpl.Params
	var perr error
	if root {
		p, perr = loadParams(f, world.Size())
		if perr != nil {
			fmt.Fprint(stderr, hpl.PWarn(0, "HPL_pdinfo", perr.Error()))
			fmt.Fprint(stderr, hpl.PWarn(0, "HPL_pdinfo", "Illegal input in file HPL.dat. Exiting ..."))
		}
	}
	p, err := hpl.ShareParams(world, p, perr)
	if err != nil {
		if !errors.Is(err, hpl.ErrIllegalInput) {
			fmt.Fprintf(stderr, "hpl: rank %d: %v\n", world.Rank(), err)
		}
		return 1
	}
	out := io.Discard
	var outFile *os.File
	if root {
		switch p.Device {
		case 6:
			out = stdout
		case 7:
			out = stderr
		default:
			if outFile, err = os.Create(p.OutFile); err != nil {
				fmt.Fprint(stderr, hpl.PWarn(0, "HPL_pdinfo", fmt.Sprintf("cannot open file %s.", p.OutFile)))
				out = nil
			} else {
				out = outFile
				defer outFile.Close()
			}
		}
	}
	// Every rank must agree to go on, or none starts the collective tests.
	ok, err := agree(world, out != nil)
	if err != nil || !ok {
		return 1
	}
	d := &hpl.Driver{Params: p, Out: out, ErrOut: stderr, Options: hpl.Options{DetailedTiming: f.detailed}}
	var report jsonReport
	report.Ranks = world.Size()
	if root {
		if sf, isFile := stdout.(*os.File); isFile && !f.noProgres && p.Device == 6 && term.IsTerminal(int(sf.Fd())) {
			d.Options.Progress = progressLine(sf)
		}
		d.OnResult = func(c hpl.Case, r *hpl.Result) {
			report.Results = append(report.Results, jsonResult{Variant: r.Variant, N: r.N, NB: r.NB, P: r.P,
				Q: r.Q, Time: r.Time, Gflops: r.Gflops, Resid: r.Resid, Checked: r.Checked, Passed: r.Passed,
				Skipped: r.Skipped || r.NoMemory, Start: r.Start, End: r.End})
		}
	}
	sum, err := d.Run(world)
	if err != nil {
		if !errors.Is(err, hpl.ErrIllegalInput) {
			fmt.Fprintf(stderr, "hpl: rank %d: %v\n", world.Rank(), err)
		}
		return 1
	}
	if root && f.jsonPath != "" {
		report.Passed, report.Failed, report.Skipped = sum.Pass, sum.Fail, sum.Skip
		b, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(f.jsonPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "hpl: %v\n", err)
			return 1
		}
	}
	return 0
}

// agree is true on every rank when ok is true on rank 0 (rank 0 decides whether the run goes
// on after its local checks).
func agree(world *comm.Comm, ok bool) (bool, error) {
	v := []uint8{0}
	if ok {
		v[0] = 1
	}
	if err := collectives.Bcast(world, v, 0); err != nil {
		return false, err
	}
	return v[0] == 1, nil
}

// progressLine rewrites one terminal line with the panel count; it clears itself at the end
// so that netlib's output follows undisturbed.
func progressLine(w io.Writer) func(done, total int) {
	start := time.Now()
	last := time.Time{}
	return func(done, total int) {
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
			return
		}
		if time.Since(last) < 200*time.Millisecond {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "\r\033[Khpl: panel %d/%d (%.0f%%), %.1f s", done, total,
			100*(1-cube(1-float64(done)/float64(total))), time.Since(start).Seconds())
	}
}

func cube(x float64) float64 { return x * x * x }
