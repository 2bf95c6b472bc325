package hpl

import (
	"fmt"
	"io"
	"strings"
	"time"
)

const (
	lineEq   = "================================================================================"
	lineDash = "--------------------------------------------------------------------------------"
)

// Algo is one combination of the algorithmic variants HPL.dat lists.
type Algo struct {
	PFact   Fact
	RFact   Fact
	NBMin   int
	NDiv    int
	BCast   Topo
	Depth   int
	Swap    Swap
	SwapThr int
	Order   Order // process mapping, printed in the variant code
	// L1NoTrans, UNoTrans, Equil and Align are carried for the report; the factorization
	// computes the same result whatever they are.
	L1NoTrans, UNoTrans, Equil bool
	Align                      int
}

func (f Fact) letter() byte { return "LCR"[f] }

// Code is the encoded variant of the T/V column, e.g. "WR11C2R4": W(all time), R/C process
// mapping, depth, bcast, rfact, ndiv, pfact, nbmin.
func (a Algo) Code() string {
	o := byte('R')
	if a.Order == ColumnMajor {
		o = 'C'
	}
	return fmt.Sprintf("W%c%1d%c%c%1d%c%1d", o, a.Depth, byte('0'+a.BCast), a.RFact.letter(),
		a.NDiv, a.PFact.letter(), a.NBMin)
}

// Result is the outcome of one test (one N, NB, grid and variant).
type Result struct {
	N, NB, P, Q int
	Variant     string
	Time        float64 // seconds, the slowest rank's
	Gflops      float64
	Start, End  time.Time
	Checked     bool // false when the threshold is <= 0: no residual check
	Resid       float64
	Passed      bool
	Skipped     bool // the solve reported a singular matrix (netlib's "skip")
	Info        int  // 1-based column of the first zero pivot, 0 when none
	// NoMemory: the test was skipped before it allocated anything, its system being too
	// large for the memory of a process (netlib's "Memory allocation failed"). MemRow and
	// MemCol are the grid coordinates of the first such process, Need what the processes on
	// its host need and Have what the host has, in bytes.
	NoMemory       bool
	MemRow, MemCol int
	Need, Have     float64
	// The quantities of the residual, printed by netlib when a test fails.
	Resid0, AnormI, Anorm1, XnormI, Xnorm1, BnormI float64
	// Detail is the slowest process's time per phase, when asked for.
	Detail *Timing
}

// Gflops is HPL's rate: (2/3 N^3 + 3/2 N^2) / t, computed in netlib's order of operations.
func Gflops(n int, t float64) float64 {
	if t <= 0 {
		return 0
	}
	fn := float64(n)
	return ((fn / 1.0e+9) * (fn / t)) * ((2.0/3.0)*fn + 3.0/2.0)
}

// Eps is the relative machine precision HPL prints and uses (LAPACK's dlamch('e')).
const Eps = 1.1102230246251565e-16

func writeList(b *strings.Builder, label string, n int, item func(i int) string) {
	b.WriteString("\n" + label)
	for i := range min(8, n) {
		b.WriteString(item(i))
	}
	if n > 8 {
		b.WriteString("\n        ")
		for i := 8; i < min(16, n); i++ {
			b.WriteString(item(i))
		}
		if n > 16 {
			b.WriteString("\n        ")
			for i := 16; i < n; i++ {
				b.WriteString(item(i))
			}
		}
	}
}

var factNames = [...]string{"    Left ", "   Crout ", "   Right "}
var topoNames = [...]string{"   1ring ", "  1ringM ", "   2ring ", "  2ringM ", "   Blong ", "  BlongM "}

// WriteHeader prints the banner and parameter block netlib's HPL_pdinfo prints.
func WriteHeader(w io.Writer, p *Params) error {
	var b strings.Builder
	b.WriteString(lineEq + "\n")
	b.WriteString("HPLinpack 2.3  --  High-Performance Linpack benchmark  --   December 2, 2018\n")
	b.WriteString("Written by A. Petitet and R. Clint Whaley,  Innovative Computing Laboratory, UTK\n")
	b.WriteString("Modified by Piotr Luszczek, Innovative Computing Laboratory, UTK\n")
	b.WriteString("Modified by Julien Langou, University of Colorado Denver\n")
	b.WriteString(lineEq + "\n")
	b.WriteString("\nAn explanation of the input/output parameters follows:\n")
	b.WriteString("T/V    : Wall time / encoded variant.\n")
	b.WriteString("N      : The order of the coefficient matrix A.\n")
	b.WriteString("NB     : The partitioning blocking factor.\n")
	b.WriteString("P      : The number of process rows.\n")
	b.WriteString("Q      : The number of process columns.\n")
	b.WriteString("Time   : Time in seconds to solve the linear system.\n")
	b.WriteString("Gflops : Rate of execution for solving the linear system.\n\n")
	b.WriteString("The following parameter values will be used:\n")
	ints := func(v []int) func(int) string { return func(i int) string { return fmt.Sprintf("%8d ", v[i]) } }
	writeList(&b, "N      :", len(p.Ns), ints(p.Ns))
	writeList(&b, "NB     :", len(p.NBs), ints(p.NBs))
	if p.PMap == RowMajor {
		b.WriteString("\nPMAP   : Row-major process mapping")
	} else {
		b.WriteString("\nPMAP   : Column-major process mapping")
	}
	writeList(&b, "P      :", len(p.Ps), ints(p.Ps))
	writeList(&b, "Q      :", len(p.Qs), ints(p.Qs))
	writeList(&b, "PFACT  :", len(p.PFacts), func(i int) string { return factNames[p.PFacts[i]] })
	writeList(&b, "NBMIN  :", len(p.NBMins), ints(p.NBMins))
	writeList(&b, "NDIV   :", len(p.NDivs), ints(p.NDivs))
	writeList(&b, "RFACT  :", len(p.RFacts), func(i int) string { return factNames[p.RFacts[i]] })
	writeList(&b, "BCAST  :", len(p.BCasts), func(i int) string { return topoNames[p.BCasts[i]] })
	writeList(&b, "DEPTH  :", len(p.Depths), ints(p.Depths))
	switch p.Swap {
	case SwapBinExch:
		b.WriteString("\nSWAP   : Binary-exchange")
	case SwapLong:
		b.WriteString("\nSWAP   : Spread-roll (long)")
	default:
		fmt.Fprintf(&b, "\nSWAP   : Mix (threshold = %d)", p.SwapThr)
	}
	form := func(notrans bool) string {
		if notrans {
			return " no-transposed form"
		}
		return " transposed form"
	}
	b.WriteString("\nL1     :" + form(p.L1NoTrans))
	b.WriteString("\nU      :" + form(p.UNoTrans))
	if p.Equil {
		b.WriteString("\nEQUIL  : yes")
	} else {
		b.WriteString("\nEQUIL  : no")
	}
	fmt.Fprintf(&b, "\nALIGN  : %d double precision words", p.Align)
	b.WriteString("\n\n")
	if p.Threshold > 0 {
		b.WriteString(lineDash + "\n\n")
		b.WriteString("- The matrix A is randomly generated for each test.\n")
		b.WriteString("- The following scaled residual check will be computed:\n")
		b.WriteString("      ||Ax-b||_oo / ( eps * ( || x ||_oo * || A ||_oo + || b ||_oo ) * N )\n")
		fmt.Fprintf(&b, "%s %21.6e\n", "- The relative machine precision (eps) is taken to be     ", Eps)
		fmt.Fprintf(&b, "%s   %11.1f\n\n", "- Computational tests pass if scaled residuals are less than      ", p.Threshold)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ctime is C's ctime() layout (without its newline).
const ctime = "Mon Jan _2 15:04:05 2006"

// WriteTableHead prints the T/V table head netlib prints before each test (once only when
// the threshold is <= 0).
func WriteTableHead(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s\n%s\n%s\n", lineEq,
		"T/V                N    NB     P     Q               Time                 Gflops", lineDash)
	return err
}

// WriteResult prints one test's table row, its start and end times and, when checked, the
// residual line (and the norms when it failed), as HPL_pdtest does.
func WriteResult(w io.Writer, r *Result) error {
	var b strings.Builder
	if r.NoMemory {
		// Netlib prints the largest row and column of the grid here (the maximum of every
		// process's coordinates); this names the process that could not allocate.
		b.WriteString(PWarn(0, "HPL_pdtest", fmt.Sprintf("[%d,%d] %s", r.MemRow, r.MemCol,
			"Memory allocation failed for A, x and b. Skip.")))
		_, err := io.WriteString(w, b.String())
		return err
	}
	if r.Time > 0 {
		fmt.Fprintf(&b, "%s%12d %5d %5d %5d %18.2f    %19.4e\n", r.Variant, r.N, r.NB, r.P, r.Q,
			r.Time, r.Gflops)
		fmt.Fprintf(&b, "HPL_pdgesv() start time %s\n\n", r.Start.Format(ctime))
		fmt.Fprintf(&b, "HPL_pdgesv() end time   %s\n\n", r.End.Format(ctime))
	}
	if d := r.Detail; d != nil {
		b.WriteString("--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV-\n")
		for _, kv := range []struct {
			k string
			v float64
		}{
			{"Max aggregated wall time rfact . . . : ", d.RFact},
			{"+ Max aggregated wall time pfact . . : ", d.PFact},
			{"+ Max aggregated wall time mxswp . . : ", d.MxSwp},
			{"Max aggregated wall time update  . . : ", d.Update},
			{"+ Max aggregated wall time laswp . . : ", d.LaSwp},
			{"Max aggregated wall time up tr sv  . : ", d.UpTrSv},
		} {
			if kv.v > 0 {
				fmt.Fprintf(&b, "%s%18.2f\n", kv.k, kv.v)
			}
		}
		if !r.Checked && !r.Skipped {
			b.WriteString(lineEq + "\n")
		}
	}
	if r.Skipped {
		b.WriteString(PWarn(0, "HPL_pdtest", fmt.Sprintf("Error code returned by solve is %d, skip", r.Info)))
	} else if r.Checked {
		b.WriteString(lineDash + "\n")
		verdict := "FAILED"
		if r.Passed {
			verdict = "PASSED"
		}
		fmt.Fprintf(&b, "%s%16.8e%s%s\n", "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= ",
			r.Resid, " ...... ", verdict)
		if !r.Passed {
			for _, kv := range []struct {
				k string
				v float64
			}{
				{"||Ax-b||_oo  . . . . . . . . . . . . . . . . . = ", r.Resid0},
				{"||A||_oo . . . . . . . . . . . . . . . . . . . = ", r.AnormI},
				{"||A||_1  . . . . . . . . . . . . . . . . . . . = ", r.Anorm1},
				{"||x||_oo . . . . . . . . . . . . . . . . . . . = ", r.XnormI},
				{"||x||_1  . . . . . . . . . . . . . . . . . . . = ", r.Xnorm1},
				{"||b||_oo . . . . . . . . . . . . . . . . . . . = ", r.BnormI},
			} {
				fmt.Fprintf(&b, "%s%18.6f\n", kv.k, kv.v)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summary counts a run's tests as netlib's driver does.
type Summary struct {
	Pass, Fail, Skip int
	Checked          bool // threshold > 0
	Detailed         bool // detailed timing: unchecked tests already closed their blocks
}

// WriteSummary prints the "Finished N tests" block and "End of Tests.".
func WriteSummary(w io.Writer, s Summary) error {
	var b strings.Builder
	if s.Checked || !s.Detailed {
		b.WriteString(lineEq + "\n")
	}
	fmt.Fprintf(&b, "\n%s %6d %s\n", "Finished", s.Pass+s.Fail+s.Skip, "tests with the following results:")
	if s.Checked {
		fmt.Fprintf(&b, "         %6d %s\n", s.Pass, "tests completed and passed residual checks,")
		fmt.Fprintf(&b, "         %6d %s\n", s.Fail, "tests completed and failed residual checks,")
		fmt.Fprintf(&b, "         %6d %s\n", s.Skip, "tests skipped because of illegal input values.")
	} else {
		fmt.Fprintf(&b, "         %6d %s\n", s.Pass, "tests completed without checking,")
		fmt.Fprintf(&b, "         %6d %s\n", s.Skip, "tests skipped because of illegal input values.")
	}
	b.WriteString(lineDash + "\n")
	b.WriteString("\nEnd of Tests.\n")
	b.WriteString(lineEq + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// PWarn formats a message as netlib's HPL_pwarn does (without a source line number).
func PWarn(rank int, fn, msg string) string {
	return fmt.Sprintf("HPL ERROR from process # %d, in function %s:\n>>> %s <<<\n\n", rank, fn, msg)
}
