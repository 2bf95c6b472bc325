package tokenizer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
)

// TestAgainstLlamaCpp tokenizes random text with llama.cpp itself and compares ids. It runs
// only when GORUN_LLAMACPP_TOKENIZE names a build of testdata/llamacpp-tokenize.cpp (see the
// build line there); llama.cpp is never part of this repository.
//
// Inputs are valid UTF-8: on invalid bytes this package deliberately differs (it keeps them,
// where llama.cpp's byte-level BPE turns them into U+FFFD).
func TestAgainstLlamaCpp(t *testing.T) {
	bin := os.Getenv("GORUN_LLAMACPP_TOKENIZE")
	if bin == "" {
		t.Skip("GORUN_LLAMACPP_TOKENIZE not set (path of a built testdata/llamacpp-tokenize.cpp)")
	}
	alphabet := append([]string{"<s>", "</s>", "<unk>", "<|endoftext|>", "<0x41>", "▁", "  ", "\n\n", "'S", "'ll", "1234"},
		encAlphabet...)
	alphabet = append(alphabet, preAlphabet...)
	var valid []string
	for _, a := range alphabet {
		if strings.ToValidUTF8(a, "") == a {
			valid = append(valid, a)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	n := 400
	if testing.Short() {
		n = 100
	}
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		for range 1 + r.IntN(30) {
			b.WriteString(valid[r.IntN(len(valid))])
		}
		texts[i] = b.String()
	}
	inp := filepath.Join(t.TempDir(), "texts.inp")
	if err := os.WriteFile(inp, []byte(strings.Join(texts, "\n__ggml_vocab_test__\n")+"\n__ggml_vocab_test__\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// GPT-2's vocabulary under the other pre-tokenizers: llama.cpp then splits words with the
	// Llama 3, Qwen2 or default expressions (and, for Llama 3, takes whole-word tokens).
	dir := t.TempDir()
	gpt2, err := os.ReadFile(filepathOf(t, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "stories260K.gguf"} {
		files[name] = filepathOf(t, name)
	}
	for _, pre := range []string{"llama-bpe", "qwen2", "default"} {
		patched, err := setGGUFString(gpt2, "tokenizer.ggml.pre", "gpt-2", pre)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "gpt-2-as-"+pre+".gguf")
		if err := os.WriteFile(p, patched, 0o644); err != nil {
			t.Fatal(err)
		}
		files["gpt-2-as-"+pre] = p
	}
	for name, path := range files {
		tok, err := New(vocabFromGGUF(t, path))
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range [][2]bool{{false, false}, {true, true}, {true, false}} {
			out, err := exec.Command(bin, "ids", path, inp, b2s(mode[0]), b2s(mode[1])).Output()
			if err != nil {
				t.Fatalf("%s: %v", bin, err)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(lines) != len(texts) {
				t.Fatalf("%s: %d lines for %d texts", name, len(lines), len(texts))
			}
			bad := 0
			for i, text := range texts {
				var want []int32
				for _, f := range strings.Fields(lines[i]) {
					v, _ := strconv.Atoi(f)
					want = append(want, int32(v))
				}
				got, err := tok.Encode(text, mode[0], mode[1])
				if err != nil {
					t.Fatal(err)
				}
				if !equalIDs(got, want) {
					if bad++; bad <= 5 {
						t.Errorf("%s add=%v parse=%v %q:\n got  %v\n want %v", name, mode[0], mode[1], text, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s add=%v parse=%v: %d of %d texts differ", name, mode[0], mode[1], bad, len(texts))
			}
		}
	}
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func filepathOf(tb testing.TB, name string) string {
	tb.Helper()
	return testfiles.Path(tb, "llm", name)
}

// setGGUFString rewrites one string-valued metadata entry of a GGUF file with no tensors (a
// vocab-only file: nothing after the metadata depends on its length).
func setGGUFString(file []byte, key, old, val string) ([]byte, error) {
	enc := func(s string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
		return append(b, s...)
	}
	pat := append(enc(key), binary.LittleEndian.AppendUint32(nil, uint32(gguf.TypeString))...)
	i := bytes.Index(file, append(pat, enc(old)...))
	if i < 0 {
		return nil, fmt.Errorf("%s = %q not found", key, old)
	}
	j := i + len(pat) + len(enc(old))
	out := append(append(append([]byte(nil), file[:i+len(pat)]...), enc(val)...), file[j:]...)
	return out, nil
}

// BenchmarkVsLlamaCpp encodes the same 64 KiB of prose with llama.cpp (through the driver
// named by GORUN_LLAMACPP_TOKENIZE) and with this package in one run, and reports llama.cpp's
// time per encode and the ratio ours/llama.cpp (below 1: faster than llama.cpp). Both run on
// one thread; both are checked to produce the same number of tokens.
func BenchmarkVsLlamaCpp(b *testing.B) {
	bin := os.Getenv("GORUN_LLAMACPP_TOKENIZE")
	if bin == "" {
		b.Skip("GORUN_LLAMACPP_TOKENIZE not set (path of a built testdata/llamacpp-tokenize.cpp)")
	}
	text := strings.Repeat(benchProse, 65536/len(benchProse)+1)[:65536]
	inp := filepath.Join(b.TempDir(), "prose.txt")
	if err := os.WriteFile(inp, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"} {
		tok := loadTokenizer(b, name)
		b.Run(strings.TrimSuffix(strings.TrimPrefix(name, "ggml-vocab-"), ".gguf"), func(b *testing.B) {
			out, err := exec.Command(bin, "bench", filepathOf(b, name), inp, "20").Output()
			if err != nil {
				b.Fatalf("%s: %v", bin, err)
			}
			var n int
			var secs float64
			if _, err := fmt.Sscanf(string(out), "tokens %d seconds_per_rep %g", &n, &secs); err != nil {
				b.Fatalf("%s output %q: %v", bin, out, err)
			}
			ids, err := tok.Encode(text, false, false)
			if err != nil {
				b.Fatal(err)
			}
			if len(ids) != n {
				b.Fatalf("%d tokens, llama.cpp %d", len(ids), n)
			}
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tok.Encode(text, false, false); err != nil {
					b.Fatal(err)
				}
			}
			ours := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(secs*1e9, "llamacpp-ns/op")
			b.ReportMetric(ours/secs, "ratio")
		})
	}
}
