// Package hpl is the High-Performance Linpack benchmark on gorun: it reads netlib's HPL.dat,
// solves a dense random system Ax=b with a right-looking blocked LU factorization distributed
// 2D block-cyclically over a P x Q process grid, checks the scaled residual and prints the
// results in netlib HPL 2.3's output format, so that a run can be compared with netlib's.
package hpl

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxParam is the most values a list line of HPL.dat may hold (netlib's HPL_MAX_PARAM).
const MaxParam = 20

// Order is the mapping of ranks onto the process grid (HPL.dat line 9, PMAP).
type Order int

const (
	RowMajor    Order = 0 // rank = myrow*Q + mycol
	ColumnMajor Order = 1 // rank = mycol*P + myrow
)

// Fact is a panel factorization variant (PFACT and RFACT).
type Fact int

const (
	Left  Fact = 0 // left-looking
	Crout Fact = 1
	Right Fact = 2 // right-looking
)

// Topo is a panel broadcast topology (BCAST).
type Topo int

const (
	Ring1  Topo = 0 // increasing ring
	Ring1M Topo = 1 // increasing ring, modified: the next panel's owner is served first
	Ring2  Topo = 2 // two rings
	Ring2M Topo = 3 // two rings, modified
	Long   Topo = 4 // spread-roll (bandwidth reducing)
	LongM  Topo = 5 // spread-roll, modified
)

// Swap is the row-swapping algorithm (SWAP).
type Swap int

const (
	SwapBinExch Swap = 0 // binary exchange
	SwapLong    Swap = 1 // spread-roll (long)
	SwapMix     Swap = 2 // binary exchange up to the threshold number of columns, long above
)

// Params is the content of an HPL.dat file: every list is run in a cross product, as netlib
// HPL's driver does.
type Params struct {
	OutFile   string // line 3: output file name, used when Device is neither 6 nor 7
	Device    int    // line 4: 6 = stdout, 7 = stderr, anything else = OutFile
	Ns        []int
	NBs       []int
	PMap      Order
	Ps, Qs    []int
	Threshold float64
	PFacts    []Fact
	NBMins    []int
	NDivs     []int
	RFacts    []Fact
	BCasts    []Topo
	Depths    []int
	Swap      Swap
	SwapThr   int  // columns; SwapMix uses binary exchange up to this many
	L1NoTrans bool // line 28: L1 stored untransposed (storage only: results are the same)
	UNoTrans  bool // line 29: U stored untransposed (storage only)
	Equil     bool // line 30: equilibration of the long swap
	Align     int  // line 31: memory alignment in doubles
}

// MaxProcs is the largest P*Q over the grids: the ranks a run needs (math.MaxInt when a
// product does not fit in an int).
func (p *Params) MaxProcs() int {
	m := 0
	for i := range p.Ps {
		m = max(m, gridSize(p.Ps[i], p.Qs[i]))
	}
	return m
}

// gridSize is P*Q, math.MaxInt when it does not fit in an int.
func gridSize(P, Q int) int {
	if P > 0 && Q > math.MaxInt/P {
		return math.MaxInt
	}
	return P * Q
}

// Tests is the number of tests a run performs (the cross product of every list).
func (p *Params) Tests() int {
	return len(p.Ns) * len(p.NBs) * len(p.Ps) * len(p.PFacts) * len(p.NBMins) * len(p.NDivs) *
		len(p.RFacts) * len(p.BCasts) * len(p.Depths)
}

// DatError is a malformed HPL.dat: the file, the 1-based line and what was expected there.
type DatError struct {
	File string
	Line int
	Msg  string
}

func (e *DatError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// datReader hands out HPL.dat lines, numbered for error messages.
type datReader struct {
	name  string
	sc    *bufio.Scanner
	line  int
	words []string
}

func (r *datReader) errf(format string, a ...any) error {
	return &DatError{File: r.name, Line: r.line, Msg: fmt.Sprintf(format, a...)}
}

// next reads the next line; what names the line's content for the end-of-file error.
func (r *datReader) next(what string) error {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return fmt.Errorf("%s: line %d: %w", r.name, r.line+1, err)
		}
		r.line++
		return r.errf("unexpected end of file, expected %s", what)
	}
	r.line++
	r.words = strings.Fields(r.sc.Text())
	return nil
}

// ints reads the first n whitespace-separated integers of the next line; the rest of the line
// is a comment, as netlib reads it.
func (r *datReader) ints(n int, what string) ([]int, error) {
	if err := r.next(what); err != nil {
		return nil, err
	}
	if len(r.words) < n {
		if n == 1 {
			return nil, r.errf("expected %s, found an empty line", what)
		}
		return nil, r.errf("expected %d values of %s, found %d", n, what, len(r.words))
	}
	out := make([]int, n)
	for i := range n {
		v, err := strconv.Atoi(r.words[i])
		if err != nil {
			return nil, r.errf("expected an integer for %s, found %q", what, r.words[i])
		}
		out[i] = v
	}
	return out, nil
}

func (r *datReader) int1(what string) (int, error) {
	v, err := r.ints(1, what)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// count reads a "# of ..." line: between 1 and MaxParam.
func (r *datReader) count(what string) (int, error) {
	n, err := r.int1("the number of values of " + what)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > MaxParam {
		return 0, r.errf("number of values of %s is less than 1 or greater than %d (found %d)",
			what, MaxParam, n)
	}
	return n, nil
}

// list reads n values of what, each at least lo.
func (r *datReader) list(n int, what string, lo int) ([]int, error) {
	v, err := r.ints(n, what)
	if err != nil {
		return nil, err
	}
	for _, x := range v {
		if x < lo {
			return nil, r.errf("value of %s less than %d (found %d)", what, lo, x)
		}
	}
	return v, nil
}

// ParseDat reads an HPL.dat in netlib HPL 2.3's positional format (31 lines; lines after the
// 31st are ignored). name is used in error messages. Values netlib accepts and maps (an
// unknown PFACT means Right, an unknown BCAST 1ringM, an unknown SWAP long, ...) are mapped the
// same way; what netlib rejects, and anything that is not a number, is an error naming the line.
func ParseDat(rd io.Reader, name string) (*Params, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	r := &datReader{name: name, sc: sc}
	p := &Params{}
	var err error
	// Lines 1-2: free text.
	for _, what := range []string{"a title line", "a second title line"} {
		if err = r.next(what); err != nil {
			return nil, err
		}
	}
	if err = r.next("the output file name"); err != nil {
		return nil, err
	}
	if len(r.words) == 0 {
		return nil, r.errf("expected the output file name, found an empty line")
	}
	p.OutFile = r.words[0]
	if p.Device, err = r.int1("the output device (6=stdout, 7=stderr, other=file)"); err != nil {
		return nil, err
	}
	var n int
	if n, err = r.count("N"); err != nil {
		return nil, err
	}
	if p.Ns, err = r.list(n, "N", 0); err != nil {
		return nil, err
	}
	if n, err = r.count("NB"); err != nil {
		return nil, err
	}
	if p.NBs, err = r.list(n, "NB", 1); err != nil {
		return nil, err
	}
	pm, err := r.int1("PMAP (0=row-major, 1=column-major)")
	if err != nil {
		return nil, err
	}
	p.PMap = RowMajor
	if pm == 1 {
		p.PMap = ColumnMajor
	}
	if n, err = r.count("process grids (P x Q)"); err != nil {
		return nil, err
	}
	if p.Ps, err = r.list(n, "P", 1); err != nil {
		return nil, err
	}
	if p.Qs, err = r.list(n, "Q", 1); err != nil {
		return nil, err
	}
	if err = r.next("the residual threshold"); err != nil {
		return nil, err
	}
	if len(r.words) == 0 {
		return nil, r.errf("expected the residual threshold, found an empty line")
	}
	if p.Threshold, err = strconv.ParseFloat(r.words[0], 64); err != nil {
		return nil, r.errf("expected a number for the residual threshold, found %q", r.words[0])
	}
	facts := func(what string) ([]Fact, error) {
		n, err := r.count(what)
		if err != nil {
			return nil, err
		}
		v, err := r.ints(n, what)
		if err != nil {
			return nil, err
		}
		out := make([]Fact, n)
		for i, x := range v {
			out[i] = Right // netlib maps any other value to right-looking
			if x == 0 || x == 1 {
				out[i] = Fact(x)
			}
		}
		return out, nil
	}
	if p.PFacts, err = facts("PFACT"); err != nil {
		return nil, err
	}
	if n, err = r.count("NBMIN"); err != nil {
		return nil, err
	}
	if p.NBMins, err = r.list(n, "NBMIN", 1); err != nil {
		return nil, err
	}
	if n, err = r.count("NDIV"); err != nil {
		return nil, err
	}
	if p.NDivs, err = r.list(n, "NDIV", 2); err != nil {
		return nil, err
	}
	if p.RFacts, err = facts("RFACT"); err != nil {
		return nil, err
	}
	if n, err = r.count("BCAST"); err != nil {
		return nil, err
	}
	bc, err := r.ints(n, "BCAST")
	if err != nil {
		return nil, err
	}
	p.BCasts = make([]Topo, n)
	for i, x := range bc {
		p.BCasts[i] = Ring1M // netlib's choice for an unknown value
		if x >= 0 && x <= 5 {
			p.BCasts[i] = Topo(x)
		}
	}
	if n, err = r.count("DEPTH"); err != nil {
		return nil, err
	}
	if p.Depths, err = r.list(n, "DEPTH", 0); err != nil {
		return nil, err
	}
	sw, err := r.int1("SWAP (0=bin-exch, 1=long, 2=mix)")
	if err != nil {
		return nil, err
	}
	p.Swap = SwapLong
	if sw == 0 || sw == 2 {
		p.Swap = Swap(sw)
	}
	if p.SwapThr, err = r.int1("the swapping threshold"); err != nil {
		return nil, err
	}
	p.SwapThr = max(p.SwapThr, 0)
	l1, err := r.int1("L1 form (0=transposed, 1=no-transposed)")
	if err != nil {
		return nil, err
	}
	p.L1NoTrans = l1 == 1
	u, err := r.int1("U form (0=transposed, 1=no-transposed)")
	if err != nil {
		return nil, err
	}
	p.UNoTrans = u == 1
	eq, err := r.int1("equilibration (0=no, 1=yes)")
	if err != nil {
		return nil, err
	}
	p.Equil = eq != 0
	if p.Align, err = r.int1("the memory alignment in doubles"); err != nil {
		return nil, err
	}
	if p.Align <= 0 {
		p.Align = 4
	}
	return p, nil
}
