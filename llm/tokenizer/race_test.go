package tokenizer

import (
	"sync"
	"testing"
)

// TestConcurrentEncode: one Tokenizer serves many goroutines (the pooled scratch buffers must
// not be shared between calls); run with -race.
func TestConcurrentEncode(t *testing.T) {
	toks := []*Tokenizer{loadTokenizer(t, "stories260K.gguf"), loadTokenizer(t, "ggml-vocab-gpt-2.gguf")}
	texts := []string{"Once upon a time", benchProse, "😀 12345 I'M here\n\n", ""}
	want := make([][][]int32, len(toks))
	for i, tok := range toks {
		for _, s := range texts {
			ids, err := tok.Encode(s, true, true)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], ids)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for k := range 50 {
				i, j := (g+k)%len(toks), k%len(texts)
				ids, err := toks[i].Encode(texts[j], true, true)
				if err != nil || !equalIDs(ids, want[i][j]) {
					errs <- texts[j]
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs", s)
	}
}
