// Package kern holds the element-wise reduction kernels behind collectives' ops. Every kernel
// has the shape MPI gives user functions: inout[i] = in[i] ⊕ inout[i], where in holds the
// contribution of the lower ranks (the left operand, which matters for non-commutative ops).
// len(in) must be at least len(inout); kernels touch len(inout) elements.
//
// The float32 and float64 sums run in AVX2 assembly on amd64 (pure Go twins under the noasm
// build tag); the other kernels are unrolled Go loops that bounds-check once per 8 elements.
package kern

// Integer, Float, Ordered and Number are the type sets the kernels are written over.
type (
	Integer interface {
		~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
	}
	Float   interface{ ~float32 | ~float64 }
	Ordered interface{ Integer | Float }
	Number  interface {
		Ordered | ~complex64 | ~complex128
	}
)

// Sum sets inout[i] = in[i] + inout[i].
func Sum[T Number](in, inout []T) {
	n := len(inout)
	in = in[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		a := in[i : i+8 : i+8]
		b := inout[i : i+8 : i+8]
		b[0] = a[0] + b[0]
		b[1] = a[1] + b[1]
		b[2] = a[2] + b[2]
		b[3] = a[3] + b[3]
		b[4] = a[4] + b[4]
		b[5] = a[5] + b[5]
		b[6] = a[6] + b[6]
		b[7] = a[7] + b[7]
	}
	for ; i < n; i++ {
		inout[i] = in[i] + inout[i]
	}
}

// Prod sets inout[i] = in[i] * inout[i].
func Prod[T Number](in, inout []T) {
	n := len(inout)
	in = in[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		a := in[i : i+4 : i+4]
		b := inout[i : i+4 : i+4]
		b[0] = a[0] * b[0]
		b[1] = a[1] * b[1]
		b[2] = a[2] * b[2]
		b[3] = a[3] * b[3]
	}
	for ; i < n; i++ {
		inout[i] = in[i] * inout[i]
	}
}

// Min sets inout[i] = min(in[i], inout[i]); a NaN in either operand gives NaN (Go's min).
func Min[T Ordered](in, inout []T) {
	n := len(inout)
	in = in[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		a := in[i : i+4 : i+4]
		b := inout[i : i+4 : i+4]
		b[0] = min(a[0], b[0])
		b[1] = min(a[1], b[1])
		b[2] = min(a[2], b[2])
		b[3] = min(a[3], b[3])
	}
	for ; i < n; i++ {
		inout[i] = min(in[i], inout[i])
	}
}

// Max sets inout[i] = max(in[i], inout[i]); a NaN in either operand gives NaN (Go's max).
func Max[T Ordered](in, inout []T) {
	n := len(inout)
	in = in[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		a := in[i : i+4 : i+4]
		b := inout[i : i+4 : i+4]
		b[0] = max(a[0], b[0])
		b[1] = max(a[1], b[1])
		b[2] = max(a[2], b[2])
		b[3] = max(a[3], b[3])
	}
	for ; i < n; i++ {
		inout[i] = max(in[i], inout[i])
	}
}

// And, Or and Xor are the bitwise reductions.
func And[T Integer](in, inout []T) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] = in[i] & inout[i]
	}
}

// Or sets inout[i] = in[i] | inout[i].
func Or[T Integer](in, inout []T) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] = in[i] | inout[i]
	}
}

// Xor sets inout[i] = in[i] ^ inout[i].
func Xor[T Integer](in, inout []T) {
	in = in[:len(inout)]
	for i := range inout {
		inout[i] = in[i] ^ inout[i]
	}
}

// MaxLoc reduces (value, index) pairs stored interleaved: [v0, i0, v1, i1, ...]. The larger
// value wins; on a tie the smaller index wins (MPI_MAXLOC), so the result does not depend on
// the order of reduction. len(inout) must be even.
func MaxLoc[T Ordered](in, inout []T) {
	in = in[:len(inout)]
	for i := 0; i+1 < len(inout); i += 2 {
		v, x := in[i], in[i+1]
		if v > inout[i] || (v == inout[i] && x < inout[i+1]) {
			inout[i], inout[i+1] = v, x
		}
	}
}

// MinLoc is MaxLoc with the smaller value winning (MPI_MINLOC).
func MinLoc[T Ordered](in, inout []T) {
	in = in[:len(inout)]
	for i := 0; i+1 < len(inout); i += 2 {
		v, x := in[i], in[i+1]
		if v < inout[i] || (v == inout[i] && x < inout[i+1]) {
			inout[i], inout[i+1] = v, x
		}
	}
}

// SumFloat32 is Sum for float32, vectorized where the CPU allows.
func SumFloat32(in, inout []float32) {
	n := len(inout)
	in = in[:n]
	m := sumFloat32Vec(in, inout)
	Sum(in[m:], inout[m:])
}

// SumFloat64 is Sum for float64, vectorized where the CPU allows.
func SumFloat64(in, inout []float64) {
	n := len(inout)
	in = in[:n]
	m := sumFloat64Vec(in, inout)
	Sum(in[m:], inout[m:])
}
