package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// pad is the sentinel stored outside the logical matrix (between m and lda
// and after the last column) so that tests catch writes outside it.
var pad = math.Float64frombits(0x7ff8_dead_beef_0001) // a NaN with a payload

// randMat returns an r×c column-major matrix with leading dimension ld and
// extra trailing elements, all outside elements set to pad.
func randMat(rng *rand.Rand, r, c, ld int) []float64 {
	a := make([]float64, max(ld*c, 1)+3)
	for i := range a {
		a[i] = pad
	}
	for j := range c {
		for i := range r {
			a[i+j*ld] = rng.Float64()*2 - 1
		}
	}
	return a
}

// checkPad fails if any element outside the r×c matrix changed.
func checkPad(t *testing.T, what string, a []float64, r, c, ld int) {
	t.Helper()
	for idx, v := range a {
		i, j := idx%ld, idx/ld
		if i < r && j < c {
			continue
		}
		if math.Float64bits(v) != math.Float64bits(pad) {
			t.Fatalf("%s: element %d (row %d col %d) outside the %d×%d matrix changed to %v", what, idx, i, j, r, c, v)
		}
	}
}

// maxDiff returns the largest |a-b| over the r×c matrices, failing on NaN.
func maxDiff(r, c int, a []float64, lda int, b []float64, ldb int) float64 {
	var d float64
	for j := range c {
		for i := range r {
			x, y := a[i+j*lda], b[i+j*ldb]
			if math.IsNaN(x) != math.IsNaN(y) {
				return math.Inf(1)
			}
			d = max(d, math.Abs(x-y))
		}
	}
	return d
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("%s: no panic", name)
		}
		if s := fmt.Sprint(r); len(s) < 10 || s[:8] != "linalg: " {
			t.Fatalf("%s: panic message %q does not name linalg", name, s)
		}
	}()
	f()
}

// sizes are the matrix dimensions the tests try: tiny, odd, around the
// micro-kernel tile sizes and around the leaf sizes of the recursive routines.
var sizes = []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 65}
