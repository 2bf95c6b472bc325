package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

const benchProse = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. " +
	"One day, she saw a big, red ball under a tree! \"Can I play with it?\" she asked her mom. " +
	"It's 3:45 p.m., and we've got 1,234 things to do — naïve café résumé 日本語 😀.\n\n"

// BenchmarkEncode measures throughput (bytes/s of input) on prose and on single long words,
// where every merge happens inside one word: the sizes show the O(n log n) growth of the
// heap-driven merge loops (a rescanning loop would grow as n^2).
func BenchmarkEncode(b *testing.B) {
	toks := []struct{ name, file string }{
		{"spm", "ggml-vocab-llama-spm.gguf"},
		{"gpt2", "ggml-vocab-gpt-2.gguf"},
	}
	r := rand.New(rand.NewPCG(5, 6))
	letters := func(n int) string {
		var s strings.Builder
		for range n {
			s.WriteByte("etaoinshrdlu"[r.IntN(12)])
		}
		return s.String()
	}
	inputs := []struct{ name, text string }{
		{"prose-64KiB", strings.Repeat(benchProse, 65536/len(benchProse)+1)[:65536]},
	}
	for _, n := range []int{1 << 10, 1 << 13, 1 << 16} {
		inputs = append(inputs, struct{ name, text string }{fmt.Sprintf("word-%d", n), letters(n)})
	}
	for _, tk := range toks {
		tok := loadTokenizer(b, tk.file)
		for _, in := range inputs {
			b.Run(tk.name+"/"+in.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.text)))
				var n int
				for b.Loop() {
					ids, err := tok.Encode(in.text, false, false)
					if err != nil {
						b.Fatal(err)
					}
					n = len(ids)
				}
				b.ReportMetric(float64(len(in.text))/float64(n), "bytes/token")
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := loadTokenizer(b, "ggml-vocab-gpt-2.gguf")
	text := strings.Repeat(benchProse, 65536/len(benchProse))
	ids, err := tok.Encode(text, false, false)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if tok.Decode(ids) != text {
			b.Fatal("round trip failed")
		}
	}
}

// TestMergeWorkIsLinear counts heap pops on long single words: with a heap, each merge adds at
// most two candidates, so pops stay within a small multiple of the length (a rescanning merge
// loop would do n^2/2 pair checks). Time itself is left to the benchmarks.
func TestMergeWorkIsLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "stories260K.gguf"} {
		tok := loadTokenizer(t, f)
		for _, n := range []int{1 << 10, 1 << 14, 1 << 16} {
			var s strings.Builder
			for range n {
				s.WriteByte("etaoinshrdlu"[r.IntN(12)])
			}
			for i, text := range []string{s.String(), strings.Repeat("a", n)} {
				sc := new(scratch)
				var err error
				if tok.spm {
					_, err = tok.encodeSPM(sc, text, nil)
				} else {
					_, err = tok.encodeBPEWord(sc, text, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if sc.pops > 3*n || (i == 0 && sc.pops < n/8) {
					t.Errorf("%s, %d-byte word %q...: %d heap pops, want [%d, %d]", f, n, text[:8], sc.pops, n/8, 3*n)
				}
			}
		}
	}
}
