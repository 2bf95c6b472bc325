package tokenizer

import (
	"bufio"
	"encoding/binary"
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

// vocabFromGGUF builds a Vocab from a GGUF file the way a model loader would: defaults per
// tokenizer model, then the keys present in the file.
func vocabFromGGUF(tb testing.TB, path string) Vocab {
	tb.Helper()
	meta, err := readGGUFMeta(path)
	if err != nil {
		tb.Fatal(err)
	}
	model, _ := meta["tokenizer.ggml.model"].(string)
	pre, _ := meta["tokenizer.ggml.pre"].(string)
	v := NewVocab(model, pre)
	v.Tokens, _ = meta["tokenizer.ggml.tokens"].([]string)
	v.Scores, _ = meta["tokenizer.ggml.scores"].([]float32)
	v.Types, _ = meta["tokenizer.ggml.token_type"].([]int32)
	v.Merges, _ = meta["tokenizer.ggml.merges"].([]string)
	ids := map[string]*int32{
		"tokenizer.ggml.bos_token_id":     &v.BOS,
		"tokenizer.ggml.eos_token_id":     &v.EOS,
		"tokenizer.ggml.unknown_token_id": &v.UNK,
		"tokenizer.ggml.padding_token_id": &v.PAD,
		"tokenizer.ggml.eot_token_id":     &v.EOT,
	}
	for k, p := range ids {
		if x, ok := meta[k].(uint32); ok {
			*p = int32(x)
		}
	}
	flags := map[string]*bool{
		"tokenizer.ggml.add_bos_token":    &v.AddBOS,
		"tokenizer.ggml.add_eos_token":    &v.AddEOS,
		"tokenizer.ggml.add_space_prefix": &v.AddSpacePrefix,
	}
	for k, p := range flags {
		if x, ok := meta[k].(bool); ok {
			*p = x
		}
	}
	return v
}
