package tokenizer

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// vocabCache keeps each real vocabulary loaded once per test binary (the GPT-2 one takes a
// noticeable fraction of a second to read and index).
var vocabCache sync.Map

func loadTokenizer(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	p := testfiles.Path(tb, "llm", name)
	if t, ok := vocabCache.Load(p); ok {
		return t.(*Tokenizer)
	}
	tok, err := New(vocabFromGGUF(tb, p))
	if err != nil {
		tb.Fatalf("%s: %v", p, err)
	}
	vocabCache.Store(p, tok)
	return tok
}

type vector struct {
	text string
	ids  []int32
	line int // line in the .out file
}

// loadVectors reads llama.cpp's test-tokenizer-0 files: .inp holds the strings separated by
// "\n__ggml_vocab_test__\n", .out one line of space-separated ids per string.
func loadVectors(tb testing.TB, name string) []vector {
	tb.Helper()
	inp, err := os.ReadFile(testfiles.Path(tb, "llm", name+".inp"))
	if err != nil {
		tb.Fatal(err)
	}
	outPath := testfiles.Path(tb, "llm", name+".out")
	out, err := os.ReadFile(outPath)
	if err != nil {
		tb.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	// The file ends with a separator, which leaves one empty string after it.
	if len(texts) > 0 && texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) {
		tb.Fatalf("%s: %d strings but %d id lines", name, len(texts), len(lines))
	}
	vs := make([]vector, len(texts))
	for i, text := range texts {
		var ids []int32
		for _, f := range strings.Fields(lines[i]) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				tb.Fatalf("%s:%d: %v", outPath, i+1, err)
			}
			ids = append(ids, int32(v))
		}
		vs[i] = vector{text: text, ids: ids, line: i + 1}
	}
	return vs
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVectors checks every llama.cpp test vector (add_special=false, parse_special=false, as
// test-tokenizer-0 runs them) and that decoding the ids gives the string back.
func TestVectors(t *testing.T) {
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		t.Run(name, func(t *testing.T) {
			tok := loadTokenizer(t, name)
			vs := loadVectors(t, name)
			if len(vs) < 40 {
				t.Fatalf("only %d vectors read", len(vs))
			}
			for _, v := range vs {
				got, err := tok.Encode(v.text, false, false)
				if err != nil {
					t.Errorf("line %d %q: %v", v.line, v.text, err)
					continue
				}
				if !equalIDs(got, v.ids) {
					t.Errorf("line %d %q:\n got  %v\n want %v", v.line, v.text, got, v.ids)
				}
				if back := tok.Decode(v.ids); back != v.text {
					t.Errorf("line %d: Decode(want ids) = %q, want %q", v.line, back, v.text)
				}
			}
		})
	}
}
