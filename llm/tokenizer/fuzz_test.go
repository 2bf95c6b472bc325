package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode: for any text, encoding never fails with these complete vocabularies (every byte
// has a token), every id is in range, and decoding gives the text back: always for byte-level
// BPE; for SentencePiece unless the text holds U+2581, the character it uses for a space.
// Streaming the ids gives the same bytes as decoding them without stripping.
func FuzzEncode(f *testing.F) {
	spm := loadTokenizer(f, "stories260K.gguf")
	big := loadTokenizer(f, "ggml-vocab-llama-spm.gguf")
	gpt := loadTokenizer(f, "ggml-vocab-gpt-2.gguf")
	for _, s := range []string{"", " ", "Once upon a time", "<s>x</s>", "a<|endoftext|>b", "😀\xff\xe4", "I'm 12345 x\n\n\ty"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range []*Tokenizer{spm, big, gpt} {
			ids, err := tok.Encode(text, false, false)
			if err != nil {
				t.Fatalf("Encode(%q): %v", text, err)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tok.NumTokens() {
					t.Fatalf("Encode(%q): id %d out of range", text, id)
				}
			}
			if !tok.spm || !strings.Contains(text, spaceMark) {
				if back := tok.Decode(ids); back != text {
					t.Fatalf("Decode(Encode(%q)) = %q", text, back)
				}
			}
			sd := tok.NewStreamDecoder()
			var streamed, pieces strings.Builder
			for _, id := range ids {
				s := sd.Add(id)
				streamed.WriteString(s)
				pieces.WriteString(tok.TokenPiece(id))
			}
			streamed.WriteString(sd.Flush())
			if streamed.String() != pieces.String() {
				t.Fatalf("%q: streamed %q, pieces %q", text, streamed.String(), pieces.String())
			}
			if utf8.ValidString(text) && !utf8.ValidString(streamed.String()) {
				t.Fatalf("%q: valid text streamed as invalid UTF-8 %q", text, streamed.String())
			}
			ids, err = tok.Encode(text, true, true)
			if err != nil {
				t.Fatalf("Encode(%q, special): %v", text, err)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tok.NumTokens() {
					t.Fatalf("Encode(%q, special): id %d out of range", text, id)
				}
			}
		}
	})
}

// FuzzNew builds vocabularies from arbitrary bytes, as a corrupted GGUF file could hold them:
// New must reject them with an error or build a tokenizer that encodes and decodes anything
// without panicking.
func FuzzNew(f *testing.F) {
	f.Add("<unk>\n<s>\n</s>\n<0x41>\na\nb\nab\n▁\n▁a", []byte{2, 3, 3, 6, 1, 1, 1, 1, 1}, "", "ab<s>ba A", uint8(0))
	f.Add("a\nb\nab\nĠ\nĠa\n<|eot|>", []byte{1, 1, 1, 1, 1, 3}, "a b\nĠ a", "ab a<|eot|>", uint8(0x13))
	f.Add("x\ny\nxy", []byte{1, 1, 7}, "x y\nxy", "xyxy", uint8(0x05))
	f.Add("", []byte{}, "", "", uint8(0))
	f.Fuzz(func(t *testing.T, tokens string, types []byte, merges, text string, mode uint8) {
		if len(tokens) > 1<<12 || len(merges) > 1<<12 || len(text) > 1<<12 {
			return
		}
		model := ModelSPM
		if mode&1 != 0 {
			model = ModelBPE
		}
		pres := []string{"default", "gpt-2", "llama3", "qwen2", "", "unknown"}
		v := NewVocab(model, pres[int(mode>>1)%len(pres)])
		if tokens != "" {
			v.Tokens = strings.Split(tokens, "\n")
		}
		if len(types) >= len(v.Tokens) {
			v.Types = make([]int32, len(v.Tokens))
			for i := range v.Types {
				v.Types[i] = int32(types[i] % 8) // 7 is invalid on purpose
			}
		}
		v.Scores = make([]float32, len(v.Tokens))
		for i := range v.Scores {
			v.Scores[i] = -float32(i % 7)
		}
		if merges != "" {
			v.Merges = strings.Split(merges, "\n")
		}
		v.BOS, v.EOS, v.UNK = int32(mode>>4&3)-1, int32(mode>>6)-1, 0
		if len(v.Tokens) == 0 {
			v.UNK = -1
		}
		v.AddEOS = mode&0x80 != 0
		tok, err := New(v)
		if err != nil {
			return
		}
		for _, ps := range []bool{false, true} {
			ids, err := tok.Encode(text, true, ps)
			if err != nil {
				continue
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tok.NumTokens() {
					t.Fatalf("id %d out of range [0, %d)", id, tok.NumTokens())
				}
			}
			_ = tok.Decode(ids)
			sd := tok.NewStreamDecoder()
			for _, id := range ids {
				sd.Add(id)
			}
			sd.Flush()
		}
	})
}
