package hpl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

func TestSquarestGridAndDefault(t *testing.T) {
	for n, want := range map[int][2]int{1: {1, 1}, 2: {1, 2}, 3: {1, 3}, 4: {2, 2}, 6: {2, 3}, 8: {2, 4}, 9: {3, 3}, 12: {3, 4}} {
		if P, Q := SquarestGrid(n); P != want[0] || Q != want[1] {
			t.Fatalf("SquarestGrid(%d) = %dx%d, want %dx%d", n, P, Q, want[0], want[1])
		}
	}
	p := DefaultParams(4)
	if p.Ps[0] != 2 || p.Qs[0] != 2 || p.Ns[0]%p.NBs[0] != 0 || p.Ns[0] < 4000 || p.Tests() != 1 {
		t.Fatalf("default params %+v", p)
	}
	var b bytes.Buffer
	if err := WriteHeader(&b, p); err != nil || !strings.Contains(b.String(), "BCAST  :  1ringM") {
		t.Fatalf("default header %v:\n%s", err, b.String())
	}
}

// The driver runs the cross product on the grid's ranks, leaves the extra rank idle, and
// prints netlib's blocks on rank 0 only.
func TestDriverRun(t *testing.T) {
	p, err := ParseDat(strings.NewReader(smokeDat), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	p.Ns, p.NBs, p.Ps, p.Qs = []int{20, 31}, []int{4}, []int{1, 2}, []int{2, 1}
	p.PFacts, p.RFacts, p.NBMins = []Fact{Left}, []Fact{Right}, []int{2}
	var outs [3]bytes.Buffer
	var sums [3]Summary
	err = comm.Run(3, func(c *comm.Comm) error {
		d := &Driver{Params: p, Out: &outs[c.Rank()], ErrOut: &outs[c.Rank()]}
		s, err := d.Run(c)
		sums[c.Rank()] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := outs[0].String()
	if strings.Count(s, "...... PASSED") != 4 || !strings.Contains(s, "WR00R2L2          31     4     2     1") ||
		!strings.Contains(s, "Finished      4 tests with the following results:") || sums[0].Pass != 4 {
		t.Fatalf("rank 0 output (summary %+v):\n%s", sums[0], s)
	}
	if outs[1].Len() != 0 || outs[2].Len() != 0 {
		t.Fatalf("other ranks printed: %q %q", outs[1].String(), outs[2].String())
	}
	// Too few ranks: HPL's message on rank 0 and ErrIllegalInput on every rank.
	err = comm.Run(2, func(c *comm.Comm) error {
		var b bytes.Buffer
		p2 := *p
		p2.Ps, p2.Qs = []int{3}, []int{1}
		_, err := (&Driver{Params: &p2, Out: &b, ErrOut: &b}).Run(c)
		if !errors.Is(err, ErrIllegalInput) {
			return fmt.Errorf("want ErrIllegalInput, got %v", err)
		}
		if c.Rank() == 0 && !strings.Contains(b.String(), "Need at least 3 processes for these tests") {
			return errors.New("no HPL message: " + b.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Detailed timing prints netlib's HPL_DETAILED_TIMING block with the phases that took time.
func TestDriverDetailedTiming(t *testing.T) {
	p, err := ParseDat(strings.NewReader(smokeDat), "HPL.dat")
	if err != nil {
		t.Fatal(err)
	}
	p.Ns, p.NBs, p.Ps, p.Qs = []int{300}, []int{16}, []int{2}, []int{2}
	p.PFacts, p.RFacts, p.NBMins = []Fact{Right}, []Fact{Crout}, []int{4}
	var out bytes.Buffer
	err = comm.Run(4, func(c *comm.Comm) error {
		var b bytes.Buffer
		d := &Driver{Params: p, Out: &b, ErrOut: &b, Options: Options{DetailedTiming: true}}
		_, err := d.Run(c)
		if c.Rank() == 0 {
			out = b
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"--VVV--VVV--", "Max aggregated wall time rfact . . . : ",
		"Max aggregated wall time update  . . : ", "Max aggregated wall time up tr sv  . : "} {
		if !strings.Contains(s, want) {
			t.Fatalf("no %q in:\n%s", want, s)
		}
	}
	if strings.Index(s, "--VVV--") > strings.Index(s, "...... PASSED") {
		t.Fatalf("detail block after the residual:\n%s", s)
	}
}
