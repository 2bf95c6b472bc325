package tokenizer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"testing"
)

// This file is a deliberately small, test-only GGUF metadata reader: the tokenizer package must
// not import llm/gguf (built in parallel), yet the tests need the real vocabularies stored in
// GGUF files. It reads the header and the key/value section only and stops before tensor infos.

const (
	ggufU8 = iota
	ggufI8
	ggufU16
	ggufI16
	ggufU32
	ggufI32
	ggufF32
	ggufBool
	ggufString
	ggufArray
	ggufU64
	ggufI64
	ggufF64
)

type ggufReader struct {
	r   *bufio.Reader
	off int64
}

func (g *ggufReader) read(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil {
		return nil, fmt.Errorf("offset %d: %w", g.off, err)
	}
	g.off += int64(n)
	return b, nil
}

func (g *ggufReader) u32() (uint32, error) {
	b, err := g.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (g *ggufReader) u64() (uint64, error) {
	b, err := g.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (g *ggufReader) str() (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if n > 1<<24 {
		return "", fmt.Errorf("offset %d: string length %d too large", g.off, n)
	}
	b, err := g.read(int(n))
	return string(b), err
}

func (g *ggufReader) value(typ uint32) (any, error) {
	switch typ {
	case ggufU8, ggufI8, ggufBool:
		b, err := g.read(1)
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufU8:
			return b[0], nil
		case ggufI8:
			return int8(b[0]), nil
		}
		return b[0] != 0, nil
	case ggufU16, ggufI16:
		b, err := g.read(2)
		if err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint16(b)
		if typ == ggufI16 {
			return int16(v), nil
		}
		return v, nil
	case ggufU32, ggufI32, ggufF32:
		v, err := g.u32()
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufI32:
			return int32(v), nil
		case ggufF32:
			return math.Float32frombits(v), nil
		}
		return v, nil
	case ggufU64, ggufI64, ggufF64:
		v, err := g.u64()
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufI64:
			return int64(v), nil
		case ggufF64:
			return math.Float64frombits(v), nil
		}
		return v, nil
	case ggufString:
		return g.str()
	case ggufArray:
		et, err := g.u32()
		if err != nil {
			return nil, err
		}
		n, err := g.u64()
		if err != nil {
			return nil, err
		}
		if n > 1<<24 {
			return nil, fmt.Errorf("offset %d: array length %d too large", g.off, n)
		}
		switch et {
		case ggufString:
			out := make([]string, n)
			for i := range out {
				if out[i], err = g.str(); err != nil {
					return nil, err
				}
			}
			return out, nil
		case ggufF32:
			out := make([]float32, n)
			for i := range out {
				v, err := g.u32()
				if err != nil {
					return nil, err
				}
				out[i] = math.Float32frombits(v)
			}
			return out, nil
		case ggufI32:
			out := make([]int32, n)
			for i := range out {
				v, err := g.u32()
				if err != nil {
					return nil, err
				}
				out[i] = int32(v)
			}
			return out, nil
		default:
			out := make([]any, n)
			for i := range out {
				if out[i], err = g.value(et); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("offset %d: unknown GGUF value type %d", g.off, typ)
}

// readGGUFMeta returns the key/value metadata of a GGUF v2/v3 file.
func readGGUFMeta(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := &ggufReader{r: bufio.NewReaderSize(f, 1<<16)}
	magic, err := g.read(4)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if string(magic) != "GGUF" {
		return nil, fmt.Errorf("%s: not a GGUF file (magic %q)", path, magic)
	}
	ver, err := g.u32()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ver != 2 && ver != 3 {
		return nil, fmt.Errorf("%s: unsupported GGUF version %d", path, ver)
	}
	if _, err := g.u64(); err != nil { // tensor count
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	nkv, err := g.u64()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if nkv > 1<<20 {
		return nil, fmt.Errorf("%s: %d metadata entries is implausible", path, nkv)
	}
	meta := make(map[string]any, nkv)
	for range nkv {
		key, err := g.str()
		if err != nil {
			return nil, fmt.Errorf("%s: key: %w", path, err)
		}
		typ, err := g.u32()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		v, err := g.value(typ)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		meta[key] = v
	}
	return meta, nil
}

// testMeta serves readGGUFMeta's map through the Metadata interface, as llm/gguf's *File does.
type testMeta map[string]any

var errTestNotFound = errors.New("key not found")

func metaGet[T any](m testMeta, key string) (T, error) {
	var zero T
	v, ok := m[key]
	if !ok {
		return zero, fmt.Errorf("metadata %q: %w", key, errTestNotFound)
	}
	x, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("metadata %q is %T, want %T", key, v, zero)
	}
	return x, nil
}

func (m testMeta) String(key string) (string, error)      { return metaGet[string](m, key) }
func (m testMeta) Strings(key string) ([]string, error)   { return metaGet[[]string](m, key) }
func (m testMeta) Float32s(key string) ([]float32, error) { return metaGet[[]float32](m, key) }
func (m testMeta) Int32s(key string) ([]int32, error)     { return metaGet[[]int32](m, key) }
func (m testMeta) Bool(key string) (bool, error)          { return metaGet[bool](m, key) }
func (m testMeta) Uint(key string) (uint64, error) {
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("metadata %q: %w", key, errTestNotFound)
	}
	switch x := v.(type) {
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	}
	return 0, fmt.Errorf("metadata %q is %T, want an unsigned integer", key, v)
}

// vocabFromGGUF builds a Vocab from a GGUF file the way a model loader does.
func vocabFromGGUF(tb testing.TB, path string) Vocab {
	tb.Helper()
	meta, err := readGGUFMeta(path)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := VocabFromMetadata(testMeta(meta), errTestNotFound)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return v
}
