// Package gguf reads and writes GGUF files (versions 2 and 3), the model format of llama.cpp:
// a header of typed key/value metadata and tensor descriptions, then tensor data at aligned
// offsets. Open maps the file read-only and hands out tensor data as slices of the mapping, so a
// process only pages in the bytes it touches (a tensor-parallel rank touches its shard).
//
// Every count and length in the header is checked against the bytes that remain before anything
// is allocated, so a truncated or corrupt file gives an error, never a panic or a huge allocation.
package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Magic is the first four bytes of a GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// maxDepth bounds nested arrays so that a hostile file cannot exhaust the stack.
const maxDepth = 8

// KV is one metadata entry. Value holds a Go value of the matching type: uint8, int8, uint16,
// int16, uint32, int32, float32, bool, string, uint64, int64, float64, or Array.
type KV struct {
	Key   string
	Type  ValueType
	Value any
}

// Array is an array metadata value. Values is a slice of the element's Go type ([]uint32,
// []string, ...; []Array for nested arrays).
type Array struct {
	Elem   ValueType
	Values any
}

// Len returns the number of elements of a.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}

// TensorInfo describes one tensor. Dims[0] is the contiguous (innermost) dimension, as in ggml:
// a weight matrix with Dims {in, out} stores out rows of in elements.
type TensorInfo struct {
	Name   string
	Dims   []int64
	Type   Type
	Offset int64 // from the start of the data section (of part Part in a split model)
	Size   int64 // bytes
	Part   int   // index of the file holding the data in a split model (see OpenSplit); 0 otherwise
}

// Elements returns the number of elements of t.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Tensor data stays in the mapping (or the buffer given to Parse).
type File struct {
	Path       string
	Version    uint32
	KV         []KV
	Tensors    []TensorInfo
	Alignment  int
	DataOffset int64 // absolute offset of the data section (of the first part of a split model)
	Size       int64 // file size (the sum of the parts' sizes for a split model)

	parts  []*File // the parts of a split model, in order; nil for one file
	data   []byte
	osFile *os.File
	mapped bool
	kvIdx  map[string]int
	tIdx   map[string]int
}

// FormatError reports a malformed file: where and what.
type FormatError struct {
	Path   string
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	p := e.Path
	if p == "" {
		p = "gguf"
	}
	return fmt.Sprintf("%s: at byte %d: %s", p, e.Offset, e.Msg)
}

// Open maps the GGUF file at path read-only and parses its header. When the file is one part of
// a split model (llama.cpp's gguf-split layout: metadata split.count > 1), Open finds the other
// parts by name and returns them as one File; see OpenSplit.
func Open(path string) (*File, error) {
	f, err := openOne(path)
	if err != nil {
		return nil, err
	}
	return openRest(f)
}

// openOne maps and parses one file.
func openOne(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	size := st.Size()
	if size < 24 {
		fh.Close()
		return nil, &FormatError{path, 0, fmt.Sprintf("file is %d bytes, too short for a GGUF header", size)}
	}
	if size > math.MaxInt {
		fh.Close()
		return nil, fmt.Errorf("%s: file of %d bytes cannot be mapped", path, size)
	}
	data, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	f, err := parse(data, path)
	if err != nil {
		unix.Munmap(data)
		fh.Close()
		return nil, err
	}
	f.osFile = fh
	f.mapped = true
	return f, nil
}

// Parse parses a GGUF file held in memory. The File refers to data; it does not copy it.
func Parse(data []byte) (*File, error) { return parse(data, "") }

// ParseHeader parses the header of a GGUF file (metadata and tensor infos) from b, which need
// not hold the tensor data; the File describes the tensors but has no data to read.
func ParseHeader(b []byte) (*File, error) { return parseOpt(b, "", true) }

// Close unmaps the file (every part of a split model). Slices returned by TensorData must not be
// used afterwards.
func (f *File) Close() error {
	var err error
	for _, p := range f.parts {
		if e := p.Close(); err == nil {
			err = e
		}
	}
	f.parts = nil
	if f.mapped && f.data != nil {
		err = unix.Munmap(f.data)
	}
	f.data = nil
	if f.osFile != nil {
		if e := f.osFile.Close(); err == nil {
			err = e
		}
		f.osFile = nil
	}
	return err
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tIdx[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t (a slice of the mapping: reading it pages the data in).
func (f *File) TensorData(t *TensorInfo) []byte {
	f = f.part(t)
	s := f.DataOffset + t.Offset
	return f.data[s : s+t.Size : s+t.Size]
}

// Bytes returns n bytes of the data section of t starting at byte off of the tensor, bounds
// checked.
func (f *File) Bytes(t *TensorInfo, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > t.Size {
		return nil, fmt.Errorf("%s: tensor %s: range [%d,%d) outside its %d bytes", f.name(), t.Name, off, off+n, t.Size)
	}
	f = f.part(t)
	s := f.DataOffset + t.Offset + off
	return f.data[s : s+n : s+n], nil
}

// ReadAt copies bytes of tensor t starting at off into p through the file descriptor (pread),
// without touching the mapping: a rank that needs a strided shard copies it this way so that
// the pages of the other ranks' columns never count towards its resident memory. For a File
// from Parse it copies from memory.
func (f *File) ReadAt(t *TensorInfo, p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > t.Size {
		return fmt.Errorf("%s: tensor %s: read [%d,%d) outside its %d bytes", f.name(), t.Name, off, off+int64(len(p)), t.Size)
	}
	f = f.part(t)
	abs := f.DataOffset + t.Offset + off
	if f.osFile == nil {
		copy(p, f.data[abs:])
		return nil
	}
	for len(p) > 0 {
		n, err := f.osFile.ReadAt(p, abs)
		if n == 0 && err != nil {
			return fmt.Errorf("%s: tensor %s: %w", f.name(), t.Name, err)
		}
		p = p[n:]
		abs += int64(n)
	}
	return nil
}

// part returns the file that holds t's data: f itself unless f is a split model.
func (f *File) part(t *TensorInfo) *File {
	if f.parts == nil {
		return f
	}
	return f.parts[t.Part]
}

func (f *File) name() string {
	if f.Path == "" {
		return "gguf"
	}
	return f.Path
}

// Get returns the metadata entry for key.
func (f *File) Get(key string) (KV, bool) {
	i, ok := f.kvIdx[key]
	if !ok {
		return KV{}, false
	}
	return f.KV[i], true
}

// ErrNotFound is wrapped by the typed getters when a key is absent.
var ErrNotFound = errors.New("key not found")

func (f *File) get(key string) (KV, error) {
	kv, ok := f.Get(key)
	if !ok {
		return KV{}, fmt.Errorf("%s: metadata %q: %w", f.name(), key, ErrNotFound)
	}
	return kv, nil
}

// String returns a string value.
func (f *File) String(key string) (string, error) {
	kv, err := f.get(key)
	if err != nil {
		return "", err
	}
	s, ok := kv.Value.(string)
	if !ok {
		return "", fmt.Errorf("%s: metadata %q is %s, want string", f.name(), key, kv.Type)
	}
	return s, nil
}

// Uint returns an integer value of any integer type that is not negative.
func (f *File) Uint(key string) (uint64, error) {
	kv, err := f.get(key)
	if err != nil {
		return 0, err
	}
	v, ok := asInt(kv.Value)
	if !ok || v < 0 {
		return 0, fmt.Errorf("%s: metadata %q is %s %v, want a non-negative integer", f.name(), key, kv.Type, kv.Value)
	}
	return uint64(v), nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float32 or float64 value (integers are accepted too).
func (f *File) Float(key string) (float64, error) {
	kv, err := f.get(key)
	if err != nil {
		return 0, err
	}
	switch x := kv.Value.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	if v, ok := asInt(kv.Value); ok {
		return float64(v), nil
	}
	return 0, fmt.Errorf("%s: metadata %q is %s, want a number", f.name(), key, kv.Type)
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) {
	kv, err := f.get(key)
	if err != nil {
		return false, err
	}
	b, ok := kv.Value.(bool)
	if !ok {
		return false, fmt.Errorf("%s: metadata %q is %s, want bool", f.name(), key, kv.Type)
	}
	return b, nil
}

func arrayOf[T any](f *File, key string, want ValueType) ([]T, error) {
	kv, err := f.get(key)
	if err != nil {
		return nil, err
	}
	a, ok := kv.Value.(Array)
	if !ok {
		return nil, fmt.Errorf("%s: metadata %q is %s, want array of %s", f.name(), key, kv.Type, want)
	}
	s, ok := a.Values.([]T)
	if !ok {
		return nil, fmt.Errorf("%s: metadata %q is array of %s, want array of %s", f.name(), key, a.Elem, want)
	}
	return s, nil
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, error) { return arrayOf[string](f, key, TypeString) }

// Float32s returns an array of float32.
func (f *File) Float32s(key string) ([]float32, error) { return arrayOf[float32](f, key, TypeFloat32) }

// Int32s returns an array of int32.
func (f *File) Int32s(key string) ([]int32, error) { return arrayOf[int32](f, key, TypeInt32) }
