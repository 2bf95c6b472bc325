package tokenizer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// testMeta serves a map of typed metadata through the Metadata interface, as llm/gguf's
// *File does, so that tests can remove keys or give them wrong types.
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
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	v, err := VocabFromMetadata(f, gguf.ErrNotFound)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return v
}

// tokenizerMeta reads the tokenizer keys of a GGUF file, typed as the Metadata getters
// return them, into a testMeta.
func tokenizerMeta(tb testing.TB, path string) testMeta {
	tb.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m := testMeta{}
	keep := func(key string, v any, err error) {
		if errors.Is(err, gguf.ErrNotFound) {
			return
		}
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		m[key] = v
	}
	for _, k := range []string{KeyModel, KeyPre} {
		v, err := f.String(k)
		keep(k, v, err)
	}
	for _, k := range []string{KeyTokens, KeyMerges} {
		v, err := f.Strings(k)
		keep(k, v, err)
	}
	scores, err := f.Float32s(KeyScores)
	keep(KeyScores, scores, err)
	types, err := f.Int32s(KeyTokenType)
	keep(KeyTokenType, types, err)
	for _, k := range []string{KeyBOS, KeyEOS, KeyUNK, KeyPAD, KeyEOT} {
		v, err := f.Uint(k)
		keep(k, uint32(v), err)
	}
	for _, k := range []string{KeyAddBOS, KeyAddEOS, KeyAddSpacePrefix} {
		v, err := f.Bool(k)
		keep(k, v, err)
	}
	return m
}
