package quant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// format is what one tensor type registers (one file per type, one register call in its init):
// its block geometry, row conversions and dot product. Adding a type is adding such a file.
type format struct {
	typ        gguf.Type
	blockSize  int // elements per block
	blockBytes int // bytes per block
	// vec is the representation of the activation vector its dot product takes (ggml's
	// vec_dot_type): F32, F16, BF16, Q8_0, Q8_1 or Q8_K.
	vec gguf.Type
	// dequant converts whole blocks: len(dst) is len(src)/blockBytes*blockSize.
	dequant func(src []byte, dst []float32)
	// quant is the reference (round-to-nearest, no importance matrix) quantizer, same
	// lengths as dequant; nil where the type has none here.
	quant func(src []float32, dst []byte)
	// dot is the dot product of one row with a vector loaded for this type.
	dot func(row []byte, v *Vec) float32
	// rows, where set, computes y[lo:hi] for the rows of m in one call (a row-streaming
	// kernel) and reports false where it cannot (no CPU support, shapes), leaving it to dot.
	rows func(m *Matrix, v *Vec, y []float32, lo, hi int) bool
}

var formats [64]*format

func register(f format) {
	if int(f.typ) >= len(formats) || formats[f.typ] != nil {
		panic(fmt.Sprintf("quant: type %s registered twice or out of range", f.typ))
	}
	if f.blockSize != f.typ.BlockSize() || f.blockBytes != f.typ.TypeSize() {
		panic(fmt.Sprintf("quant: %s registers blocks of %d elements in %d bytes, gguf says %d in %d",
			f.typ, f.blockSize, f.blockBytes, f.typ.BlockSize(), f.typ.TypeSize()))
	}
	formats[f.typ] = &f
}

func lookup(t gguf.Type) *format {
	if uint64(t) < uint64(len(formats)) {
		return formats[t]
	}
	return nil
}

// Supported reports whether this package has kernels for t.
func Supported(t gguf.Type) bool { return lookup(t) != nil }

// SupportedTypes lists the types with kernels, in ggml's numbering order.
func SupportedTypes() []gguf.Type {
	var ts []gguf.Type
	for _, f := range formats {
		if f != nil {
			ts = append(ts, f.typ)
		}
	}
	return ts
}

// SupportedNames is SupportedTypes as one space-separated string, for error messages.
func SupportedNames() string {
	var b strings.Builder
	for i, t := range SupportedTypes() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// KernelName describes what runs the matrix-vector products of weights of type t on this
// machine: the instruction set (AVX2, AVX-512 VNNI, NEON, NEON dotprod or pure-Go, as the CPU
// detection chose), the weight type and the activation representation the kernel takes, e.g.
// "AVX2 Q4_K x Q8_K". A type without kernels is an error naming the supported ones.
func KernelName(t gguf.Type) (string, error) {
	f := lookup(t)
	if f == nil {
		return "", fmt.Errorf("type %s has no kernel here (supported: %s)", t, SupportedNames())
	}
	isa := kernelISA(t)
	if isa == "" {
		isa = "pure-Go"
	}
	return fmt.Sprintf("%s %s x %s", isa, t, f.vec), nil
}

// CanQuantize reports whether Quantize can write type t.
func CanQuantize(t gguf.Type) bool {
	f := lookup(t)
	return f != nil && f.quant != nil
}

// QuantizableTypes lists the types Quantize writes.
func QuantizableTypes() []gguf.Type {
	return slices.DeleteFunc(SupportedTypes(), func(t gguf.Type) bool { return !CanQuantize(t) })
}

// VecType is the representation an activation vector takes before a dot product with rows of
// weight type t (ggml's vec_dot_type); F32 for a type without kernels.
func VecType(t gguf.Type) gguf.Type {
	if f := lookup(t); f != nil {
		return f.vec
	}
	return gguf.F32
}

func checkLen(t gguf.Type, nbytes, n int) (*format, error) {
	f := lookup(t)
	if f == nil {
		return nil, fmt.Errorf("quant: tensor type %s is not supported (supported: %s)", t, SupportedNames())
	}
	if n%f.blockSize != 0 {
		return nil, fmt.Errorf("quant: %d elements is not a whole number of %s blocks (%d)", n, t, f.blockSize)
	}
	if want := n / f.blockSize * f.blockBytes; nbytes != want {
		return nil, fmt.Errorf("quant: %d elements of %s take %d bytes, have %d", n, t, want, nbytes)
	}
	return f, nil
}

// Dequantize converts len(dst) elements of type t from src to float32.
func Dequantize(t gguf.Type, src []byte, dst []float32) error {
	f, err := checkLen(t, len(src), len(dst))
	if err != nil {
		return err
	}
	f.dequant(src, dst)
	return nil
}

// Quantize converts src to type t with llama.cpp's reference quantizers (round to nearest, no
// importance matrix), writing t.RowBytes(len(src)) bytes to dst. Used to write model files.
func Quantize(t gguf.Type, src []float32, dst []byte) error {
	f, err := checkLen(t, len(dst), len(src))
	if err != nil {
		return err
	}
	if f.quant == nil {
		return fmt.Errorf("quant: no quantizer for %s", t)
	}
	f.quant(src, dst)
	return nil
}

// Dot returns the dot product of one row of weight type w (row holds v.N elements) with v,
// which must have been loaded for w.
func Dot(w gguf.Type, row []byte, v *Vec) float32 {
	f := lookup(w)
	if f == nil {
		panic(fmt.Sprintf("quant: Dot on unsupported type %s", w)) // callers check Supported
	}
	return f.dot(row, v)
}

// blocks calls fn for each block of a row conversion: the i-th block's bytes and elements.
func blocks(src []byte, dst []float32, bytes, elems int, fn func(b []byte, y []float32)) {
	for i := 0; i < len(dst)/elems; i++ {
		fn(src[i*bytes:(i+1)*bytes], dst[i*elems:(i+1)*elems])
	}
}

// qblocks is blocks for quantizers.
func qblocks(src []float32, dst []byte, elems, bytes int, fn func(x []float32, y []byte)) {
	for i := 0; i < len(src)/elems; i++ {
		fn(src[i*elems:(i+1)*elems], dst[i*bytes:(i+1)*bytes])
	}
}
