package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer assembles a GGUF v3 file: metadata in insertion order, then tensors in insertion
// order, each at an aligned offset. Tensor data may be given as bytes or produced by a
// function at write time, so a large file is streamed and never held in memory.
type Writer struct {
	Alignment int // 0 means DefaultAlignment
	kv        []KV
	keys      map[string]bool
	tensors   []wtensor
	names     map[string]bool
}

type wtensor struct {
	info TensorInfo
	data []byte
	fill func(w io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{keys: map[string]bool{}, names: map[string]bool{}}
}

// Set adds a metadata entry. value is one of the Go types listed at KV (a uint8 ... float64,
// bool, string) or a slice of one of them ([]string, []float32, ...), or an Array.
func (w *Writer) Set(key string, value any) error {
	if w.keys[key] {
		return fmt.Errorf("gguf: duplicate metadata key %q", key)
	}
	t, v, err := typeOf(value)
	if err != nil {
		return fmt.Errorf("gguf: metadata %q: %w", key, err)
	}
	w.keys[key] = true
	w.kv = append(w.kv, KV{key, t, v})
	return nil
}

func typeOf(value any) (ValueType, any, error) {
	switch v := value.(type) {
	case uint8:
		return TypeUint8, v, nil
	case int8:
		return TypeInt8, v, nil
	case uint16:
		return TypeUint16, v, nil
	case int16:
		return TypeInt16, v, nil
	case uint32:
		return TypeUint32, v, nil
	case int32:
		return TypeInt32, v, nil
	case float32:
		return TypeFloat32, v, nil
	case bool:
		return TypeBool, v, nil
	case string:
		return TypeString, v, nil
	case uint64:
		return TypeUint64, v, nil
	case int64:
		return TypeInt64, v, nil
	case float64:
		return TypeFloat64, v, nil
	case Array:
		return TypeArray, v, nil
	case []uint8:
		return TypeArray, Array{TypeUint8, v}, nil
	case []int8:
		return TypeArray, Array{TypeInt8, v}, nil
	case []uint16:
		return TypeArray, Array{TypeUint16, v}, nil
	case []int16:
		return TypeArray, Array{TypeInt16, v}, nil
	case []uint32:
		return TypeArray, Array{TypeUint32, v}, nil
	case []int32:
		return TypeArray, Array{TypeInt32, v}, nil
	case []float32:
		return TypeArray, Array{TypeFloat32, v}, nil
	case []bool:
		return TypeArray, Array{TypeBool, v}, nil
	case []string:
		return TypeArray, Array{TypeString, v}, nil
	case []uint64:
		return TypeArray, Array{TypeUint64, v}, nil
	case []int64:
		return TypeArray, Array{TypeInt64, v}, nil
	case []float64:
		return TypeArray, Array{TypeFloat64, v}, nil
	case []Array:
		et := TypeArray
		return TypeArray, Array{et, v}, nil
	}
	return 0, nil, fmt.Errorf("unsupported Go type %T", value)
}

// AddTensor adds a tensor whose data is given; len(data) must match dims and type.
func (w *Writer) AddTensor(name string, typ Type, dims []int64, data []byte) error {
	size, err := w.add(name, typ, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != size {
		w.tensors = w.tensors[:len(w.tensors)-1]
		delete(w.names, name)
		return fmt.Errorf("gguf: tensor %q: %d bytes given, %s %v needs %d", name, len(data), typ, dims, size)
	}
	w.tensors[len(w.tensors)-1].data = data
	return nil
}

// AddTensorFunc adds a tensor whose data fill writes at write time (exactly the size implied by
// dims and type; a different count is an error).
func (w *Writer) AddTensorFunc(name string, typ Type, dims []int64, fill func(w io.Writer) error) error {
	if _, err := w.add(name, typ, dims); err != nil {
		return err
	}
	w.tensors[len(w.tensors)-1].fill = fill
	return nil
}

func (w *Writer) add(name string, typ Type, dims []int64) (int64, error) {
	if w.names[name] {
		return 0, fmt.Errorf("gguf: duplicate tensor %q", name)
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return 0, fmt.Errorf("gguf: tensor %q: %d dimensions (1 to %d)", name, len(dims), MaxDims)
	}
	if !typ.Known() {
		return 0, fmt.Errorf("gguf: tensor %q: unknown type %d", name, uint32(typ))
	}
	n := int64(1)
	for _, d := range dims {
		if d <= 0 {
			return 0, fmt.Errorf("gguf: tensor %q: dimension %d", name, d)
		}
		n *= d
	}
	if dims[0]%int64(typ.BlockSize()) != 0 {
		return 0, fmt.Errorf("gguf: tensor %q: row of %d is not a whole number of %s blocks (%d)", name, dims[0], typ, typ.BlockSize())
	}
	size := n / int64(typ.BlockSize()) * int64(typ.TypeSize())
	w.names[name] = true
	w.tensors = append(w.tensors, wtensor{info: TensorInfo{Name: name, Dims: append([]int64(nil), dims...), Type: typ, Size: size}})
	return size, nil
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Header returns the bytes of the file up to its data section (header, metadata, tensor
// infos and padding), each tensor's offset in the data section, and the data section's size:
// the layout WriteTo writes, without the data.
func (w *Writer) Header() (header []byte, offsets []int64, dataSize int64, err error) {
	buf, align, err := w.header()
	if err != nil {
		return nil, nil, 0, err
	}
	if r := int64(len(buf)) % align; r != 0 {
		buf = append(buf, make([]byte, align-r)...)
	}
	offsets = make([]int64, len(w.tensors))
	for i, t := range w.tensors {
		offsets[i] = t.info.Offset
		dataSize = t.info.Offset + (t.info.Size+align-1)/align*align
	}
	return buf, offsets, dataSize, nil
}

// header encodes everything before the data section, unpadded, and sets the tensors' offsets.
func (w *Writer) header() ([]byte, int64, error) {
	align := int64(w.Alignment)
	if align == 0 {
		align = DefaultAlignment
	}
	if align&(align-1) != 0 {
		return nil, 0, fmt.Errorf("gguf: alignment %d is not a power of two", align)
	}
	kvs := w.kv
	if align != DefaultAlignment && !w.keys["general.alignment"] {
		kvs = append(append([]KV(nil), kvs...), KV{"general.alignment", TypeUint32, uint32(align)})
	}
	le := binary.LittleEndian
	var buf []byte
	buf = append(buf, Magic...)
	buf = le.AppendUint32(buf, 3)
	buf = le.AppendUint64(buf, uint64(len(w.tensors)))
	buf = le.AppendUint64(buf, uint64(len(kvs)))
	for _, kv := range kvs {
		buf = appendString(buf, kv.Key)
		buf = le.AppendUint32(buf, uint32(kv.Type))
		var err error
		if buf, err = appendValue(buf, kv.Type, kv.Value); err != nil {
			return nil, 0, fmt.Errorf("gguf: metadata %q: %w", kv.Key, err)
		}
	}
	off := int64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		buf = appendString(buf, t.Name)
		buf = le.AppendUint32(buf, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			buf = le.AppendUint64(buf, uint64(d))
		}
		buf = le.AppendUint32(buf, uint32(t.Type))
		buf = le.AppendUint64(buf, uint64(off))
		off += (t.Size + align - 1) / align * align
	}
	return buf, align, nil
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	buf, align, err := w.header()
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	if _, err := cw.Write(buf); err != nil {
		return cw.n, err
	}
	zeros := make([]byte, align)
	pad := func() error {
		if r := cw.n % align; r != 0 {
			_, err := cw.Write(zeros[:align-r])
			return err
		}
		return nil
	}
	if err := pad(); err != nil {
		return cw.n, err
	}
	for _, t := range w.tensors {
		start := cw.n
		if t.fill != nil {
			if err := t.fill(cw); err != nil {
				return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.info.Name, err)
			}
		} else if _, err := cw.Write(t.data); err != nil {
			return cw.n, err
		}
		if got := cw.n - start; got != t.info.Size {
			return cw.n, fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.info.Name, got, t.info.Size)
		}
		if err := pad(); err != nil {
			return cw.n, err
		}
	}
	return cw.n, cw.w.Flush()
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, t ValueType, v any) ([]byte, error) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		return append(b, x), nil
	case int8:
		return append(b, byte(x)), nil
	case bool:
		if x {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case uint16:
		return le.AppendUint16(b, x), nil
	case int16:
		return le.AppendUint16(b, uint16(x)), nil
	case uint32:
		return le.AppendUint32(b, x), nil
	case int32:
		return le.AppendUint32(b, uint32(x)), nil
	case float32:
		return le.AppendUint32(b, math.Float32bits(x)), nil
	case uint64:
		return le.AppendUint64(b, x), nil
	case int64:
		return le.AppendUint64(b, uint64(x)), nil
	case float64:
		return le.AppendUint64(b, math.Float64bits(x)), nil
	case string:
		return appendString(b, x), nil
	case Array:
		b = le.AppendUint32(b, uint32(x.Elem))
		b = le.AppendUint64(b, uint64(x.Len()))
		var err error
		switch s := x.Values.(type) {
		case []string:
			for _, e := range s {
				b = appendString(b, e)
			}
		case []Array:
			for _, e := range s {
				if b, err = appendValue(b, TypeArray, e); err != nil {
					return nil, err
				}
			}
		default:
			n := x.Len()
			vals := x.Values
			for i := 0; i < n; i++ {
				if b, err = appendValue(b, x.Elem, index(vals, i)); err != nil {
					return nil, err
				}
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("unsupported value %T for type %s", v, t)
}

func index(s any, i int) any {
	switch v := s.(type) {
	case []uint8:
		return v[i]
	case []int8:
		return v[i]
	case []uint16:
		return v[i]
	case []int16:
		return v[i]
	case []uint32:
		return v[i]
	case []int32:
		return v[i]
	case []float32:
		return v[i]
	case []bool:
		return v[i]
	case []uint64:
		return v[i]
	case []int64:
		return v[i]
	case []float64:
		return v[i]
	}
	return nil
}
