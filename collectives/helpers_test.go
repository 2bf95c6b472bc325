package collectives

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

// run runs fn on p in-process ranks and fails the test on an error or a hang; in a
// multi-process job (process_test.go), on the job's ranks if it has p of them.
func run(t *testing.T, p int, fn func(c *comm.Comm) error) {
	t.Helper()
	if inJob() {
		runInJob(t, p, fn)
		return
	}
	if err := runTimeout(p, fn); err != nil {
		t.Fatal(err)
	}
}

func runTimeout(p int, fn func(c *comm.Comm) error) error {
	done := make(chan error, 1)
	go func() { done <- comm.Run(p, fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("hang: %d ranks did not finish in 60 s", p)
	}
}

// withTuning installs a modified table for the test and restores the previous one.
func withTuning(t *testing.T, mod func(*Tuning)) {
	t.Helper()
	old := CurrentTuning()
	nt := old
	mod(&nt)
	if err := SetTuning(nt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SetTuning(old) })
}

// expectAllFail runs fn on p ranks and checks that every rank returned an error and that nobody
// hung.
func expectAllFail(t *testing.T, p int, fn func(c *comm.Comm) error) {
	t.Helper()
	run(t, p, func(c *comm.Comm) error {
		if err := fn(c); err == nil {
			return errors.New("no error on bad input")
		}
		return nil
	})
}

// ordered is the element types with every arithmetic and ordering op.
type ordered interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr | ~float32 | ~float64
}

// gen is rank r's deterministic input element i: small integers, so that float sums and
// products are exact in any order and a wrong block or a missed contribution shows.
func gen[T ordered](r, i int, forProd bool) T {
	var zero T
	signed := zero-1 < 0
	if forProd {
		v := T(1 + (r*7+i*3)%2) // 1 or 2
		if signed && (r+i)%3 == 0 {
			v = zero - v
		}
		return v
	}
	v := (r*13 + i*7 + 3) % 7 // 0..6
	if signed {
		return T(v) - 3
	}
	return T(v)
}

// refScalar is the naive definition of each built-in op (left operand a).
func refScalar[T ordered](op string, a, b T) T {
	switch op {
	case "Sum":
		return a + b
	case "Prod":
		return a * b
	case "Min":
		if b < a {
			return b
		}
		return a
	case "Max":
		if b > a {
			return b
		}
		return a
	}
	panic("no reference for " + op)
}

// refReduce folds the ranks' inputs in rank order over [lo, hi).
func refReduce[T ordered](op string, lo, hi, n int) []T {
	out := make([]T, n)
	for i := range out {
		acc := gen[T](lo, i, op == "Prod")
		for r := lo + 1; r < hi; r++ {
			acc = refScalar(op, acc, gen[T](r, i, op == "Prod"))
		}
		out[i] = acc
	}
	return out
}

func fill[T ordered](r, n int, forProd bool) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = gen[T](r, i, forProd)
	}
	return v
}

func opByName[T comm.Elem](name string) Op[T] {
	switch name {
	case "Sum":
		return Sum[T]()
	case "Prod":
		return Prod[T]()
	case "Min":
		return Min[T]()
	case "Max":
		return Max[T]()
	case "And":
		return And[T]()
	case "Or":
		return Or[T]()
	case "Xor":
		return Xor[T]()
	case "MaxLoc":
		return MaxLoc[T]()
	case "MinLoc":
		return MinLoc[T]()
	}
	panic(name)
}

func equal[T comparable](a, b []T) error {
	if len(a) != len(b) {
		return fmt.Errorf("length %d, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("element %d of %d: got %v, want %v", i, len(a), a[i], b[i])
		}
	}
	return nil
}
