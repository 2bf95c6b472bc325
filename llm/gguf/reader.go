package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decoder walks a byte slice; every read checks the bytes that remain.
type decoder struct {
	b    []byte
	off  int64
	path string
}

func (d *decoder) errf(format string, args ...any) error {
	return &FormatError{d.path, d.off, fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() int64 { return int64(len(d.b)) - d.off }

func (d *decoder) take(n int64, what string) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, d.errf("truncated: %s needs %d bytes, %d remain", what, n, d.remaining())
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	return s, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	s, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(s), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	s, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(s), nil
}

// count reads a u64 element count and checks that count elements of at least minSize bytes
// each fit in what remains, so the caller may allocate count elements.
func (d *decoder) count(what string, minSize int64) (int, error) {
	at := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, &FormatError{d.path, at, fmt.Sprintf("%s %d cannot fit in the %d bytes that remain", what, n, d.remaining())}
	}
	return int(n), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.count(what+" length", 1)
	if err != nil {
		return "", err
	}
	s, err := d.take(int64(n), what)
	if err != nil {
		return "", err
	}
	return string(s), nil
}

func parse(b []byte, path string) (*File, error) { return parseOpt(b, path, false) }

// parseOpt parses a file, or with headerOnly a header whose tensor data is absent.
func parseOpt(b []byte, path string, headerOnly bool) (*File, error) {
	d := &decoder{b: b, path: path}
	magic, err := d.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, &FormatError{path, 0, fmt.Sprintf("not a GGUF file (magic %q)", magic)}
	}
	version, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 1:
		return nil, &FormatError{path, 4, "GGUF version 1 is not supported (only 2 and 3)"}
	case version&0xffff == 0 && version != 0:
		return nil, &FormatError{path, 4, fmt.Sprintf("version %#x: big-endian GGUF files are not supported", version)}
	case version != 2 && version != 3:
		return nil, &FormatError{path, 4, fmt.Sprintf("unsupported GGUF version %d (only 2 and 3)", version)}
	}
	// A tensor info takes at least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes;
	// a key/value at least 8 (key length) + 4 (type) + 1.
	nTensors, err := d.count("tensor count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata count", 13)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Version: version, Size: int64(len(b)), data: b,
		KV: make([]KV, 0, nKV), kvIdx: make(map[string]int, nKV),
		Tensors: make([]TensorInfo, 0, nTensors), tIdx: make(map[string]int, nTensors),
		Alignment: DefaultAlignment}
	for i := 0; i < nKV; i++ {
		at := d.off
		key, err := d.str("metadata key")
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIdx[key]; dup {
			return nil, &FormatError{path, at, fmt.Sprintf("duplicate metadata key %q", key)}
		}
		t, err := d.u32("value type of " + key)
		if err != nil {
			return nil, err
		}
		v, err := d.value(ValueType(t), key, 0)
		if err != nil {
			return nil, err
		}
		f.kvIdx[key] = len(f.KV)
		f.KV = append(f.KV, KV{key, ValueType(t), v})
	}
	if kv, ok := f.Get("general.alignment"); ok {
		a, ok := asInt(kv.Value)
		if !ok || a <= 0 || a > 1<<20 || a&(a-1) != 0 {
			return nil, &FormatError{path, d.off, fmt.Sprintf("general.alignment %v is not a power of two up to 1 MiB", kv.Value)}
		}
		f.Alignment = int(a)
	}
	for i := 0; i < nTensors; i++ {
		at := d.off
		name, err := d.str("tensor name")
		if err != nil {
			return nil, err
		}
		if _, dup := f.tIdx[name]; dup {
			return nil, &FormatError{path, at, fmt.Sprintf("duplicate tensor %q", name)}
		}
		nd, err := d.u32("dimension count of " + name)
		if err != nil {
			return nil, err
		}
		if nd > MaxDims {
			return nil, d.errf("tensor %q has %d dimensions (at most %d)", name, nd, MaxDims)
		}
		dims := make([]int64, nd)
		elems := int64(1)
		for j := range dims {
			v, err := d.u64("dimension of " + name)
			if err != nil {
				return nil, err
			}
			if v > math.MaxInt64/4 || (v != 0 && elems > math.MaxInt64/4/int64(v)) {
				return nil, d.errf("tensor %q: dimensions overflow", name)
			}
			dims[j] = int64(v)
			elems *= int64(v)
		}
		tt, err := d.u32("type of " + name)
		if err != nil {
			return nil, err
		}
		typ := Type(tt)
		if !typ.Known() {
			return nil, d.errf("tensor %q has unknown type %d", name, tt)
		}
		if nd > 0 && dims[0]%int64(typ.BlockSize()) != 0 {
			return nil, d.errf("tensor %q: row of %d elements is not a whole number of %s blocks of %d", name, dims[0], typ, typ.BlockSize())
		}
		off, err := d.u64("offset of " + name)
		if err != nil {
			return nil, err
		}
		if off > math.MaxInt64/2 {
			return nil, d.errf("tensor %q: data offset %d out of range", name, off)
		}
		if off%uint64(f.Alignment) != 0 {
			return nil, d.errf("tensor %q: offset %d is not a multiple of the alignment %d", name, off, f.Alignment)
		}
		// An offset past the file cannot be valid, and one above MaxInt64 would turn negative.
		if off > uint64(f.Size) && !headerOnly {
			return nil, d.errf("tensor %q: data offset %d lies past the end of the %d-byte file", name, off, f.Size)
		}
		size := elems / int64(typ.BlockSize()) * int64(typ.TypeSize())
		f.tIdx[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, TensorInfo{Name: name, Dims: dims, Type: typ, Offset: int64(off), Size: size})
	}
	a := int64(f.Alignment)
	f.DataOffset = (d.off + a - 1) / a * a
	if headerOnly {
		f.data = nil
		return f, nil
	}
	if f.DataOffset > f.Size && nTensors > 0 {
		return nil, &FormatError{path, d.off, "truncated: data section missing"}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > f.Size || t.Size > f.Size-f.DataOffset-t.Offset {
			return nil, &FormatError{path, f.DataOffset + t.Offset, fmt.Sprintf("truncated: tensor %q (%s %v, %d bytes at data offset %d) ends past the end of the %d-byte file",
				t.Name, t.Type, t.Dims, t.Size, t.Offset, f.Size)}
		}
	}
	return f, nil
}

func (d *decoder) value(t ValueType, key string, depth int) (any, error) {
	if sz := t.fixedSize(); sz > 0 {
		s, err := d.take(int64(sz), "value of "+key)
		if err != nil {
			return nil, err
		}
		return scalar(t, s), nil
	}
	switch t {
	case TypeString:
		return d.str("string value of " + key)
	case TypeArray:
		if depth >= maxDepth {
			return nil, d.errf("metadata %q: arrays nested deeper than %d", key, maxDepth)
		}
		et, err := d.u32("array element type of " + key)
		if err != nil {
			return nil, err
		}
		return d.array(ValueType(et), key, depth+1)
	}
	return nil, d.errf("metadata %q has unknown value type %d", key, uint32(t))
}

func scalar(t ValueType, s []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return s[0]
	case TypeInt8:
		return int8(s[0])
	case TypeBool:
		return s[0] != 0
	case TypeUint16:
		return le.Uint16(s)
	case TypeInt16:
		return int16(le.Uint16(s))
	case TypeUint32:
		return le.Uint32(s)
	case TypeInt32:
		return int32(le.Uint32(s))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(s))
	case TypeUint64:
		return le.Uint64(s)
	case TypeInt64:
		return int64(le.Uint64(s))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(s))
	}
	panic("unreachable")
}

func (d *decoder) array(et ValueType, key string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errf("metadata %q: arrays nested deeper than %d", key, maxDepth)
	}
	minSize := int64(et.fixedSize())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		return nil, d.errf("metadata %q: array of unknown value type %d", key, uint32(et))
	}
	n, err := d.count("array length of "+key, minSize)
	if err != nil {
		return nil, err
	}
	if sz := et.fixedSize(); sz > 0 {
		raw, _ := d.take(int64(n)*int64(sz), key) // fits: checked by count
		le := binary.LittleEndian
		var v any
		switch et {
		case TypeUint8:
			v = append([]uint8(nil), raw...)
		case TypeInt8:
			v = decodeArray(raw, n, 1, func(b []byte) int8 { return int8(b[0]) })
		case TypeBool:
			v = decodeArray(raw, n, 1, func(b []byte) bool { return b[0] != 0 })
		case TypeUint16:
			v = decodeArray(raw, n, 2, le.Uint16)
		case TypeInt16:
			v = decodeArray(raw, n, 2, func(b []byte) int16 { return int16(le.Uint16(b)) })
		case TypeUint32:
			v = decodeArray(raw, n, 4, le.Uint32)
		case TypeInt32:
			v = decodeArray(raw, n, 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
		case TypeFloat32:
			v = decodeArray(raw, n, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
		case TypeUint64:
			v = decodeArray(raw, n, 8, le.Uint64)
		case TypeInt64:
			v = decodeArray(raw, n, 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
		case TypeFloat64:
			v = decodeArray(raw, n, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
		}
		return Array{et, v}, nil
	}
	if et == TypeString {
		s := make([]string, n)
		for i := range s {
			var err error
			if s[i], err = d.str("string in " + key); err != nil {
				return nil, err
			}
		}
		return Array{et, s}, nil
	}
	s := make([]Array, n)
	for i := range s {
		// Each element is an array value: its element type, length and values.
		et2, err := d.u32("nested array element type in " + key)
		if err != nil {
			return nil, err
		}
		v, err := d.array(ValueType(et2), key, depth+1)
		if err != nil {
			return nil, err
		}
		s[i] = v.(Array)
	}
	return Array{et, s}, nil
}

// decodeArray decodes n little-endian elements of size bytes each from raw.
func decodeArray[T any](raw []byte, n, size int, conv func([]byte) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = conv(raw[size*i:])
	}
	return out
}
