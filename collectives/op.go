package collectives

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorun-hpc/gorun/collectives/internal/kern"
	"github.com/gorun-hpc/gorun/comm"
)

// Float16 is an IEEE 754 binary16 value stored in its 16 bits. Reductions over []Float16 widen to
// float32, reduce, and round back to nearest even, as LLM frameworks do for half activations.
type Float16 uint16

// BFloat16 is a bfloat16 value (the top 16 bits of a float32), reduced in float32 like Float16.
type BFloat16 uint16

// NewFloat16 rounds f to the nearest binary16 (ties to even; overflow gives ±Inf).
func NewFloat16(f float32) Float16 { return Float16(kern.F32ToF16(f)) }

// Float32 widens h exactly.
func (h Float16) Float32() float32 { return kern.F16ToF32(uint16(h)) }

// NewBFloat16 rounds f to the nearest bfloat16 (ties to even).
func NewBFloat16(f float32) BFloat16 { return BFloat16(kern.F32ToBF16(f)) }

// Float32 widens h exactly.
func (h BFloat16) Float32() float32 { return kern.BF16ToF32(uint16(h)) }

type opKind uint8

const (
	opInvalid opKind = iota
	opSum
	opProd
	opMin
	opMax
	opMaxLoc
	opMinLoc
	opAnd
	opOr
	opXor
	opUser
)

var opNames = [...]string{"invalid", "Sum", "Prod", "Min", "Max", "MaxLoc", "MinLoc", "And", "Or", "Xor", "user"}

// Op is a reduction operator over elements of type T: MPI_Op for one datatype. Build one with
// Sum, Prod, Min, Max, MaxLoc, MinLoc, And, Or, Xor or NewOp; the zero Op is invalid. An Op whose
// operation is not defined for T (And on floats, Min on complex numbers) is still a value: every
// collective given it returns an error on every rank instead of communicating.
type Op[T comm.Elem] struct {
	name    string
	id      uint64 // identifies the op across ranks (fingerprinted by the argument check)
	fn      func(in, inout []T)
	commute bool
	unit    int // elements per reduction item: 2 for the (value, index) pairs of MaxLoc/MinLoc
	err     error
}

// Name is the op's name ("Sum", or the name given to NewOp).
func (o Op[T]) Name() string {
	if o.name == "" {
		return "invalid"
	}
	return o.name
}

// Commutative reports whether the op may combine operands in any order. Non-commutative ops
// are reduced in rank order (rank 0's contribution leftmost), with algorithms that keep it.
func (o Op[T]) Commutative() bool { return o.commute }

// Err is non-nil when the op cannot be applied to T.
func (o Op[T]) Err() error {
	if o.fn == nil && o.err == nil {
		return fmt.Errorf("collectives: zero Op (build one with Sum, Max, NewOp, ...)")
	}
	return o.err
}

// Apply reduces in into inout locally: inout[i] = in[i] ⊕ inout[i], in being the left operand.
func (o Op[T]) Apply(in, inout []T) error {
	if err := o.Err(); err != nil {
		return err
	}
	if len(in) != len(inout) {
		return fmt.Errorf("collectives: %s.Apply: lengths %d and %d differ", o.Name(), len(in), len(inout))
	}
	if len(inout)%o.unit != 0 {
		return fmt.Errorf("collectives: %s needs (value, index) pairs: length %d is odd", o.Name(), len(inout))
	}
	o.fn(in, inout)
	return nil
}

// Sum is MPI_SUM: addition for every numeric type (complex included).
func Sum[T comm.Elem]() Op[T] { return builtin[T](opSum) }

// Prod is MPI_PROD.
func Prod[T comm.Elem]() Op[T] { return builtin[T](opProd) }

// Min is MPI_MIN, for integers and floats; a NaN operand gives NaN.
func Min[T comm.Elem]() Op[T] { return builtin[T](opMin) }

// Max is MPI_MAX, for integers and floats; a NaN operand gives NaN.
func Max[T comm.Elem]() Op[T] { return builtin[T](opMax) }

// MaxLoc is MPI_MAXLOC over (value, index) pairs stored interleaved in the buffer as
// [v0, i0, v1, i1, ...], the index in the same type as the value (exact for float64 indices up
// to 2^53). The larger value wins, ties go to the smaller index. Buffers must have even length.
func MaxLoc[T comm.Elem]() Op[T] { return builtin[T](opMaxLoc) }

// MinLoc is MPI_MINLOC, laid out as MaxLoc.
func MinLoc[T comm.Elem]() Op[T] { return builtin[T](opMinLoc) }

// And is bitwise and (MPI_BAND), for integer types only.
func And[T comm.Elem]() Op[T] { return builtin[T](opAnd) }

// Or is bitwise or (MPI_BOR), for integer types only.
func Or[T comm.Elem]() Op[T] { return builtin[T](opOr) }

// Xor is bitwise exclusive or (MPI_BXOR), for integer types only.
func Xor[T comm.Elem]() Op[T] { return builtin[T](opXor) }

// NewOp makes a user-defined op from fn, which must set inout[i] = in[i] ⊕ inout[i] for every i
// (in holding the lower ranks' contribution) and must be associative; if commutative is false,
// collectives apply it in rank order. Every rank must pass an op of the same name.
func NewOp[T comm.Elem](name string, commutative bool, fn func(in, inout []T)) Op[T] {
	o := Op[T]{name: name, fn: fn, commute: commutative, unit: 1, id: hashString("user:" + name)}
	if fn == nil {
		o.err = fmt.Errorf("collectives: NewOp %q: nil function", name)
	}
	return o
}

// builtinOps caches the built-in ops by element type and kind, so that Sum[T]() and the others
// cost a lookup instead of building kernels (closures) on every call.
var builtinOps sync.Map // opKey -> Op[T]

// opTable holds one element type's built-in ops by kind: for the common types, a lookup
// without hashing a type (programs build an op in every call, as in Allreduce(c, x, y, Sum[float64]())).
type opTable[T comm.Elem] [len(opNames)]atomic.Pointer[Op[T]]

var (
	f64Ops opTable[float64]
	f32Ops opTable[float32]
	i64Ops opTable[int64]
	i32Ops opTable[int32]
	intOps opTable[int]
)

// opTableOf returns T's table, or nil for the types without one (the map serves those).
func opTableOf[T comm.Elem]() *opTable[T] {
	var p unsafe.Pointer
	switch reflect.TypeFor[T]() {
	case reflect.TypeFor[float64]():
		p = unsafe.Pointer(&f64Ops)
	case reflect.TypeFor[float32]():
		p = unsafe.Pointer(&f32Ops)
	case reflect.TypeFor[int64]():
		p = unsafe.Pointer(&i64Ops)
	case reflect.TypeFor[int32]():
		p = unsafe.Pointer(&i32Ops)
	case reflect.TypeFor[int]():
		p = unsafe.Pointer(&intOps)
	default:
		return nil
	}
	return (*opTable[T])(p) // T is exactly the table's type
}

type opKey struct {
	t reflect.Type
	k opKind
}

func builtin[T comm.Elem](k opKind) Op[T] {
	if tab := opTableOf[T](); tab != nil {
		if o := tab[k].Load(); o != nil {
			return *o
		}
		o := newBuiltin[T](k)
		tab[k].Store(&o)
		return o
	}
	key := opKey{reflect.TypeFor[T](), k}
	if v, ok := builtinOps.Load(key); ok {
		return v.(Op[T])
	}
	o := newBuiltin[T](k)
	builtinOps.Store(key, o)
	return o
}

func newBuiltin[T comm.Elem](k opKind) Op[T] {
	o := Op[T]{name: opNames[k], commute: true, unit: 1, id: uint64(k)}
	if k == opMaxLoc || k == opMinLoc {
		o.unit = 2
	}
	o.fn, o.err = resolve[T](k)
	return o
}

// resolve picks the kernel for op k and element type T, through T's underlying basic type so
// that named types (type Celsius float64) get the same vectorized kernels.
func resolve[T comm.Elem](k opKind) (func(in, inout []T), error) {
	t := reflect.TypeFor[T]()
	switch t {
	case reflect.TypeFor[Float16]():
		if k == opSum {
			return via[uint16, T](kern.SumF16), nil // F16C where available
		}
		return halfKernel[T](k, t, kern.ReduceF16)
	case reflect.TypeFor[BFloat16]():
		return halfKernel[T](k, t, kern.ReduceBF16)
	}
	switch t.Kind() {
	case reflect.Int:
		return integerKernel[int, T](k)
	case reflect.Int8:
		return integerKernel[int8, T](k)
	case reflect.Int16:
		return integerKernel[int16, T](k)
	case reflect.Int32:
		return integerKernel[int32, T](k)
	case reflect.Int64:
		return integerKernel[int64, T](k)
	case reflect.Uint:
		return integerKernel[uint, T](k)
	case reflect.Uint8:
		return integerKernel[uint8, T](k)
	case reflect.Uint16:
		return integerKernel[uint16, T](k)
	case reflect.Uint32:
		return integerKernel[uint32, T](k)
	case reflect.Uint64:
		return integerKernel[uint64, T](k)
	case reflect.Uintptr:
		return integerKernel[uintptr, T](k)
	case reflect.Float32:
		return floatKernel[float32, T](k, kern.SumFloat32)
	case reflect.Float64:
		return floatKernel[float64, T](k, kern.SumFloat64)
	case reflect.Complex64:
		return complexKernel[complex64, T](k)
	case reflect.Complex128:
		return complexKernel[complex128, T](k)
	}
	return nil, fmt.Errorf("collectives: no kernels for type %v", t)
}

func undefined(k opKind, t reflect.Type) error {
	return fmt.Errorf("collectives: op %s is not defined for element type %v", opNames[k], t)
}

// via adapts a kernel over the basic type U to T, whose underlying type is U.
func via[U, T any](f func(in, inout []U)) func(in, inout []T) {
	return func(in, inout []T) { f(castSlice[U](in), castSlice[U](inout)) }
}

func castSlice[U, T any](s []T) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func orderedKernel[U kern.Ordered](k opKind) func(in, inout []U) {
	switch k {
	case opSum:
		return kern.Sum[U]
	case opProd:
		return kern.Prod[U]
	case opMin:
		return kern.Min[U]
	case opMax:
		return kern.Max[U]
	case opMaxLoc:
		return kern.MaxLoc[U]
	case opMinLoc:
		return kern.MinLoc[U]
	}
	return nil
}

func integerKernel[U kern.Integer, T comm.Elem](k opKind) (func(in, inout []T), error) {
	f := orderedKernel[U](k)
	switch k {
	case opAnd:
		f = kern.And[U]
	case opOr:
		f = kern.Or[U]
	case opXor:
		f = kern.Xor[U]
	}
	if f == nil {
		return nil, undefined(k, reflect.TypeFor[T]())
	}
	return via[U, T](f), nil
}

func floatKernel[U kern.Float, T comm.Elem](k opKind, sum func(in, inout []U)) (func(in, inout []T), error) {
	f := orderedKernel[U](k)
	if k == opSum {
		f = sum
	}
	if f == nil {
		return nil, undefined(k, reflect.TypeFor[T]())
	}
	return via[U, T](f), nil
}

func complexKernel[U ~complex64 | ~complex128, T comm.Elem](k opKind) (func(in, inout []T), error) {
	switch k {
	case opSum:
		return via[U, T](kern.Sum[U]), nil
	case opProd:
		return via[U, T](kern.Prod[U]), nil
	}
	return nil, undefined(k, reflect.TypeFor[T]())
}

func halfKernel[T comm.Elem](k opKind, t reflect.Type, reduce func(in, inout []uint16, k func(in, inout []float32))) (func(in, inout []T), error) {
	f32 := orderedKernel[float32](k)
	if k == opSum {
		f32 = kern.SumFloat32
	}
	if f32 == nil {
		return nil, undefined(k, t)
	}
	return func(in, inout []T) { reduce(castSlice[uint16](in), castSlice[uint16](inout), f32) }, nil
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
