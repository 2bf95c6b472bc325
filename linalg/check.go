package linalg

import "fmt"

// xerbla panics with a BLAS-style message naming the routine and the
// offending argument. Invalid arguments are programmer errors.
func xerbla(routine, format string, args ...any) {
	panic(fmt.Sprintf("linalg: %s: %s", routine, fmt.Sprintf(format, args...)))
}

// matLen is the number of elements a column-major r×c matrix with leading
// dimension ld spans.
func matLen(r, c, ld int) int {
	if r == 0 || c == 0 {
		return 0
	}
	return (c-1)*ld + r
}

// vecLen is the number of elements a vector of n elements with increment
// inc spans.
func vecLen(n, inc int) int {
	if n == 0 {
		return 0
	}
	if inc < 0 {
		inc = -inc
	}
	return (n-1)*inc + 1
}

// vecStart is the index of the first element of a vector of n elements with
// increment inc, following reference BLAS for negative increments.
func vecStart(n, inc int) int {
	if inc < 0 {
		return (1 - n) * inc
	}
	return 0
}

func checkTrans(routine, name string, t Transpose) {
	if t != NoTrans && t != Trans {
		xerbla(routine, "bad %s %q (want 'N' or 'T')", name, byte(t))
	}
}

func checkMat(routine, name string, r, c int, a []float64, ld int) {
	if ld < max(1, r) {
		xerbla(routine, "ld%s = %d < max(1, %d)", name, ld, r)
	}
	if need := matLen(r, c, ld); len(a) < need {
		xerbla(routine, "len(%s) = %d < %d for a %d×%d matrix with ld%s = %d", name, len(a), need, r, c, name, ld)
	}
}

func checkVec(routine, name string, n int, x []float64, inc int) {
	if inc == 0 {
		xerbla(routine, "inc%s = 0", name)
	}
	if need := vecLen(n, inc); len(x) < need {
		xerbla(routine, "len(%s) = %d < %d for n = %d, inc%s = %d", name, len(x), need, n, name, inc)
	}
}

func checkDim(routine, name string, v int) {
	if v < 0 {
		xerbla(routine, "%s = %d < 0", name, v)
	}
}
