package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// TestStories260KReference checks the prompt ids and the decoded text of llama.cpp's greedy
// reference for the stories260K model (a 512-token SentencePiece vocabulary).
func TestStories260KReference(t *testing.T) {
	tok := loadTokenizer(t, "stories260K.gguf")
	if tok.NumTokens() != 512 {
		t.Fatalf("NumTokens = %d, want 512", tok.NumTokens())
	}
	raw, err := os.ReadFile(testfiles.Path(t, "llm", "reference-once-upon-a-time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Runs []struct {
			Model   string
			Results []struct {
				Prompt        string
				PromptIDs     []int32 `json:"prompt_ids"`
				GeneratedIDs  []int32 `json:"generated_ids"`
				GeneratedText string  `json:"generated_text"`
				Top5          []struct {
					ID    int32
					Piece string
				} `json:"first_step_top5"`
			}
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, run := range ref.Runs {
		for _, r := range run.Results {
			// llama.cpp tokenized the prompt with add_special=true, parse_special=true.
			ids, err := tok.Encode(r.Prompt, true, true)
			if err != nil {
				t.Fatal(err)
			}
			if !equalIDs(ids, r.PromptIDs) {
				t.Errorf("%s: Encode(%q) = %v, want %v", run.Model, r.Prompt, ids, r.PromptIDs)
			}
			var pieces strings.Builder
			sd := tok.NewStreamDecoder()
			var streamed strings.Builder
			for _, id := range r.GeneratedIDs {
				pieces.WriteString(tok.TokenPiece(id))
				streamed.WriteString(sd.Add(id))
			}
			streamed.WriteString(sd.Flush())
			if pieces.String() != r.GeneratedText {
				t.Errorf("%s: pieces = %q, want %q", run.Model, pieces.String(), r.GeneratedText)
			}
			if streamed.String() != r.GeneratedText {
				t.Errorf("%s: streamed = %q, want %q", run.Model, streamed.String(), r.GeneratedText)
			}
			for _, p := range r.Top5 {
				if got := tok.TokenPiece(p.ID); got != p.Piece {
					t.Errorf("TokenPiece(%d) = %q, want %q", p.ID, got, p.Piece)
				}
			}
			// Prompt and generation decode to the whole story.
			all := append(append([]int32(nil), ids...), r.GeneratedIDs...)
			if got, want := tok.Decode(all), r.Prompt+r.GeneratedText; got != want {
				t.Errorf("Decode(prompt+generated) = %q, want %q", got, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no reference results read")
	}
}

// TestByteFallback: characters the vocabulary lacks come out as their UTF-8 bytes' <0xXX>
// tokens, and decode back.
func TestByteFallback(t *testing.T) {
	tok := loadTokenizer(t, "stories260K.gguf")
	space, ok := tok.TokenID("▁")
	if !ok {
		t.Fatal("no ▁ token in stories260K")
	}
	for _, s := range []string{"😀", "Ω", "中文", "\x01", "\xff"} {
		ids, err := tok.Encode(s, false, false)
		if err != nil {
			t.Fatal(err)
		}
		want := []int32{space}
		for _, b := range []byte(s) {
			want = append(want, 3+int32(b)) // <0x00> is token 3 in this vocabulary
		}
		if !equalIDs(ids, want) {
			t.Errorf("Encode(%q) = %v, want %v", s, ids, want)
		}
		for _, id := range ids[1:] {
			if tok.TokenType(id) != TypeByte {
				t.Errorf("%q: token %d (%q) is not a byte token", s, id, tok.TokenText(id))
			}
		}
		if got := tok.Decode(ids); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
	}
	// The 32000-token Llama vocabulary has "ó" but not "😀": the vectors file checks the ids;
	// here the mix of merged and fallback tokens round-trips.
	big := loadTokenizer(t, "ggml-vocab-llama-spm.gguf")
	s := "naïve 😀 日本語 \u2028 tab\there"
	ids, err := big.Encode(s, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := big.Decode(ids); got != s {
		t.Errorf("Decode(Encode(%q)) = %q", s, got)
	}
}

func TestSpecialTokens(t *testing.T) {
	spm := loadTokenizer(t, "ggml-vocab-llama-spm.gguf")
	gpt := loadTokenizer(t, "ggml-vocab-gpt-2.gguf")
	enc := func(tok *Tokenizer, s string, addSpecial, parseSpecial bool) []int32 {
		t.Helper()
		ids, err := tok.Encode(s, addSpecial, parseSpecial)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// SentencePiece: text after a special token gets its own space prefix.
	if got, want := enc(spm, "<s>Hello</s>", false, true), []int32{1, 15043, 2}; !equalIDs(got, want) {
		t.Errorf("spm parse_special: got %v, want %v", got, want)
	}
	if got, want := enc(spm, "Hello world", true, false), []int32{1, 15043, 3186}; !equalIDs(got, want) {
		t.Errorf("spm add_special: got %v, want %v", got, want)
	}
	if got, want := enc(spm, "", true, false), []int32{1}; !equalIDs(got, want) {
		t.Errorf("spm empty with BOS: got %v, want %v", got, want)
	}
	if got := enc(spm, "", false, false); len(got) != 0 {
		t.Errorf("spm empty: got %v", got)
	}
	// Without parse_special the markers are plain text and come back as such.
	for _, tc := range []struct {
		tok  *Tokenizer
		text string
	}{{spm, "<s>Hello</s>"}, {gpt, "a<|endoftext|>b"}} {
		ids := enc(tc.tok, tc.text, false, false)
		for _, id := range ids {
			if tc.tok.TokenType(id) == TypeControl {
				t.Errorf("%q without parse_special gave control token %d", tc.text, id)
			}
		}
		if got := tc.tok.Decode(ids); got != tc.text {
			t.Errorf("Decode(Encode(%q)) = %q", tc.text, got)
		}
	}
	if got, want := enc(gpt, "a<|endoftext|>b", false, true), []int32{64, 50256, 65}; !equalIDs(got, want) {
		t.Errorf("gpt2 parse_special: got %v, want %v", got, want)
	}
	// GPT-2 adds no BOS by default (llama.cpp's default for the "gpt-2" pre-tokenizer).
	if got, want := enc(gpt, "Hello", true, false), []int32{15496}; !equalIDs(got, want) {
		t.Errorf("gpt2 add_special: got %v, want %v", got, want)
	}
	if !gpt.IsEOG(50256) || !spm.IsEOG(2) || spm.IsEOG(1) || spm.IsEOG(15043) {
		t.Error("IsEOG wrong")
	}
	// Control tokens decode to nothing; TokenText still gives their text.
	if got := spm.Decode([]int32{1, 15043, 2}); got != "Hello" {
		t.Errorf("Decode = %q, want Hello", got)
	}
	if spm.TokenText(1) != "<s>" || spm.TokenPiece(1) != "" {
		t.Error("TokenText/TokenPiece of <s> wrong")
	}

	// add_eos, and a user-defined token, which is split off even without parse_special.
	v := vocabFromGGUF(t, testfiles.Path(t, "llm", "stories260K.gguf"))
	v.AddEOS = true
	v.Types = append([]int32(nil), v.Types...)
	v.Tokens = append([]string(nil), v.Tokens...)
	v.Tokens[300] = "<tool>"
	v.Types[300] = int32(TypeUserDefined)
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	ids := enc(tok, "a<tool>b", true, false)
	if ids[0] != 1 || ids[len(ids)-1] != 2 {
		t.Errorf("BOS/EOS missing: %v", ids)
	}
	found := false
	for _, id := range ids {
		found = found || id == 300
	}
	if !found {
		t.Errorf("user-defined token not split off: %v", ids)
	}
	if got := tok.Decode(ids); got != "a<tool> b" {
		// The piece after a special token gets a space prefix, as in llama.cpp.
		t.Errorf("Decode = %q, want %q", got, "a<tool> b")
	}
}

// naiveSPM is the textbook form of SentencePiece BPE: rescan every adjacent pair after each
// merge. Quadratic, but plainly right; the heap version must agree with it.
func naiveSPM(t *Tokenizer, text string) []int32 {
	var syms []string
	for off := 0; off < len(text); {
		_, n := utf8.DecodeRuneInString(text[off:])
		syms = append(syms, text[off:off+n])
		off += n
	}
	for {
		best, bestScore := -1, float32(0)
		for i := 0; i+1 < len(syms); i++ {
			id, ok := t.mergeable[syms[i]+syms[i+1]]
			if !ok {
				continue
			}
			if s := t.scores[id]; best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		if best < 0 {
			break
		}
		syms[best] += syms[best+1]
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	var out []int32
	for _, s := range syms {
		if id, ok := t.mergeable[s]; ok {
			out = append(out, id)
			continue
		}
		for _, b := range []byte(s) {
			out = append(out, t.byteTok[b])
		}
	}
	return out
}

// naiveBPE merges by the merge list's string pairs, independent of the id-keyed table.
func naiveBPE(t *Tokenizer, ranks map[[2]string]int, word string) []int32 {
	var syms []string
	for i := 0; i < len(word); i++ {
		syms = append(syms, string(byteRune[word[i]]))
	}
	if t.ignoreMerges {
		if id, ok := t.toID[strings.Join(syms, "")]; ok {
			return []int32{id}
		}
	}
	for {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(syms); i++ {
			r, ok := ranks[[2]string{syms[i], syms[i+1]}]
			if ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		syms[best] += syms[best+1]
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	var out []int32
	for _, s := range syms {
		out = append(out, t.toID[s])
	}
	return out
}

func mergeRanks(merges []string) map[[2]string]int {
	ranks := map[[2]string]int{}
	for i, m := range merges {
		l, r, _ := strings.Cut(m, " ")
		if _, dup := ranks[[2]string{l, r}]; !dup {
			ranks[[2]string{l, r}] = i
		}
	}
	return ranks
}

var encAlphabet = []string{
	"the", " ", " ", "  ", "a", "e", "s", "t", "in", "on", "ing", "Hello", "world", ",", ".",
	"'s", "'", "\n", "\t", "3", "42", "é", "ü", "ß", "中", "文", "😀", "Ω", "\xff", "▁", "-", "!",
	"Th", "TH", "qu", "x", "zz",
}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(encAlphabet[r.IntN(len(encAlphabet))])
	}
	return b.String()
}

// TestEncodeMatchesNaive compares both merge loops with their quadratic textbook forms on
// random text, and checks Decode(Encode(s)) == s.
func TestEncodeMatchesNaive(t *testing.T) {
	spm := loadTokenizer(t, "ggml-vocab-llama-spm.gguf")
	small := loadTokenizer(t, "stories260K.gguf")
	gpt := loadTokenizer(t, "ggml-vocab-gpt-2.gguf")
	gv := vocabFromGGUF(t, testfiles.Path(t, "llm", "ggml-vocab-gpt-2.gguf"))
	gptRanks := mergeRanks(gv.Merges)
	// The same vocabulary under the Llama 3 (whole-word tokens first) and Qwen2 pre-tokenizers.
	bpes := []struct {
		tok *Tokenizer
		pre preKind
	}{{gpt, preGPT2}}
	for _, pre := range []string{"llama-bpe", "qwen2"} {
		v := gv
		v.Pre = pre
		tok, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		bpes = append(bpes, struct {
			tok *Tokenizer
			pre preKind
		}{tok, preByName[pre]})
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 1500
	if testing.Short() {
		n = 200
	}
	var ws wordSplitter
	for i := range n {
		text := randomText(r, 1+i%40)
		for _, tok := range []*Tokenizer{spm, small} {
			got, err := tok.Encode(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveSPM(tok, string(escapeSpaces([]byte(spaceMark), text)))
			if !equalIDs(got, want) {
				t.Fatalf("SPM %q:\n got  %v\n want %v", text, got, want)
			}
			if !strings.Contains(text, "▁") { // the one character SentencePiece cannot round-trip
				if back := tok.Decode(got); back != text {
					t.Fatalf("SPM Decode(Encode(%q)) = %q", text, back)
				}
			}
		}
		for _, b := range bpes {
			got, err := b.tok.Encode(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			var want []int32
			for _, w := range ws.split(b.pre, text) {
				want = append(want, naiveBPE(b.tok, gptRanks, w)...)
			}
			if !equalIDs(got, want) {
				t.Fatalf("BPE (pre %d) %q:\n got  %v\n want %v", b.pre, text, got, want)
			}
			if back := b.tok.Decode(got); back != text {
				t.Fatalf("BPE (pre %d) Decode(Encode(%q)) = %q", b.pre, text, back)
			}
		}
	}
}

// byteLevelVocab builds a small byte-level BPE vocabulary: the 256 byte characters, then the
// given merges and their results.
func byteLevelVocab(pre string, merges ...string) Vocab {
	v := NewVocab(ModelBPE, pre)
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(byteRune[b]))
	}
	for _, m := range merges {
		l, r, _ := strings.Cut(m, " ")
		v.Tokens = append(v.Tokens, l+r)
	}
	v.Merges = merges
	v.Tokens = append(v.Tokens, "<|begin_of_text|>", "<|eot_id|>")
	v.Types = make([]int32, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = int32(TypeNormal)
	}
	v.Types[len(v.Types)-2] = int32(TypeControl)
	v.Types[len(v.Types)-1] = int32(TypeControl)
	v.BOS = int32(len(v.Tokens) - 2)
	v.EOS = int32(len(v.Tokens) - 1)
	return v
}

func TestLlama3AndQwen2Vocab(t *testing.T) {
	merges := []string{"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "1 2"}
	v := byteLevelVocab("llama3", merges...)
	// "Ġworld" is a token that no merge path builds: llama3 takes whole-word tokens as they are.
	v.Tokens = append(v.Tokens, "Ġworld")
	v.Types = append(v.Types, int32(TypeNormal))
	id := func(tok *Tokenizer, s string) int32 {
		i, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	l3, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := l3.Encode("hello world<|eot_id|>", true, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{v.BOS, id(l3, "hello"), id(l3, "Ġworld"), v.EOS}
	if !equalIDs(ids, want) {
		t.Errorf("llama3: got %v, want %v", ids, want)
	}
	if !l3.IsEOG(v.EOS) || !l3.AddsBOS() {
		t.Error("llama3: EOS not end-of-generation or BOS not added by default")
	}
	// The same vocabulary with GPT-2's pre-tokenizer follows the merges instead.
	v.Pre = "gpt-2"
	g, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ = g.Encode("hello world", false, false)
	want = []int32{id(g, "hello"), id(g, "Ġwor"), id(g, "l"), id(g, "d")}
	if !equalIDs(ids, want) {
		t.Errorf("gpt-2 pre: got %v, want %v", ids, want)
	}
	// Qwen2 cuts digits one by one, so "12" never forms; Llama 3 takes up to three.
	v.Pre = "qwen2"
	q, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ = q.Encode("123", false, false)
	if want := []int32{id(q, "1"), id(q, "2"), id(q, "3")}; !equalIDs(ids, want) {
		t.Errorf("qwen2 digits: got %v, want %v", ids, want)
	}
	ids, _ = l3.Encode("123", false, false)
	if want := []int32{id(l3, "12"), id(l3, "3")}; !equalIDs(ids, want) {
		t.Errorf("llama3 digits: got %v, want %v", ids, want)
	}
	if got := q.Decode([]int32{id(q, "hello"), id(q, "Ġwor")}); got != "hello wor" {
		t.Errorf("Decode = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	good := func() Vocab {
		v := NewVocab(ModelSPM, "default")
		v.Tokens = []string{"<unk>", "a", "b", "ab"}
		v.Scores = []float32{0, -1, -2, -0.5}
		v.Types = []int32{2, 1, 1, 1}
		v.UNK = 0
		return v
	}
	if _, err := New(good()); err != nil {
		t.Fatalf("good vocabulary rejected: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Vocab)
		want   string
	}{
		{"no tokens", func(v *Vocab) { v.Tokens = nil; v.Scores = nil; v.Types = nil }, "no tokens"},
		{"scores", func(v *Vocab) { v.Scores = v.Scores[:2] }, "2 scores for 4 tokens"},
		{"types", func(v *Vocab) { v.Types = v.Types[:3] }, "3 token types for 4 tokens"},
		{"type value", func(v *Vocab) { v.Types[2] = 9 }, "unknown type 9"},
		{"model", func(v *Vocab) { v.Model = "bert" }, `unsupported tokenizer model "bert"`},
		{"bos", func(v *Vocab) { v.BOS = 4 }, "BOS id 4 out of range"},
		{"byte token", func(v *Vocab) { v.Types[3] = 6 }, `byte token 3 is "ab"`},
		{"pre", func(v *Vocab) { v.Model = ModelBPE; v.Pre = "nonesuch" }, `unsupported pre-tokenizer "nonesuch"`},
		{"merge", func(v *Vocab) { v.Model = ModelBPE; v.Pre = "gpt-2"; v.Merges = []string{"a b", "ab"} }, `merge 1 is "ab"`},
	}
	for _, c := range cases {
		v := good()
		c.mutate(&v)
		_, err := New(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// A vocabulary that cannot spell a byte: UNK when there is one, else a clear error.
	tok, err := New(good())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("abc", false, false)
	if err != nil || !reflect.DeepEqual(ids, []int32{0, 3, 0}) { // "▁" and "c" are unknown
		t.Errorf("Encode with UNK = %v, %v; want [0 3 0]", ids, err)
	}
	v := good()
	v.UNK = -1
	v.Types[0] = int32(TypeNormal)
	tok, err = New(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Encode("c", false, false); err == nil || !strings.Contains(err.Error(), "byte 0xe2 has no token") {
		t.Errorf("Encode without UNK or byte tokens: err = %v", err)
	}
}

func TestStreamDecoder(t *testing.T) {
	tok := loadTokenizer(t, "stories260K.gguf")
	text := "😀 ok 中"
	ids, err := tok.Encode(text, false, false)
	if err != nil {
		t.Fatal(err)
	}
	sd := tok.NewStreamDecoder()
	var all strings.Builder
	var outs []string
	for _, id := range ids {
		s := sd.Add(id)
		if !utf8.ValidString(s) {
			t.Errorf("Add(%d) returned invalid UTF-8 %q", id, s)
		}
		outs = append(outs, s)
		all.WriteString(s)
	}
	all.WriteString(sd.Flush())
	if all.String() != " "+text {
		t.Errorf("streamed %q, want %q", all.String(), " "+text)
	}
	// "😀" is four byte tokens after "▁": nothing comes out until the fourth.
	if want := []string{" ", "", "", "", "😀"}; !reflect.DeepEqual(outs[:5], want) {
		t.Errorf("first outputs %q, want %q", outs[:5], want)
	}
	// Bytes that can never form a character pass through; an unfinished one waits for Flush.
	b := func(x byte) int32 { return 3 + int32(x) }
	sd = tok.NewStreamDecoder()
	if got := sd.Add(b(0xff)); got != "\xff" {
		t.Errorf("invalid byte: got %q", got)
	}
	if got := sd.Add(b(0xe4)); got != "" {
		t.Errorf("lead byte: got %q", got)
	}
	if got := sd.Add(b(0xb8)); got != "" {
		t.Errorf("second byte: got %q", got)
	}
	if got := sd.Flush(); got != "\xe4\xb8" {
		t.Errorf("Flush = %q", got)
	}
	if got := sd.Add(b('a')); got != "a" {
		t.Errorf("after Flush: got %q", got)
	}
}

func TestVocabFromMetadata(t *testing.T) {
	meta := tokenizerMeta(t, testfiles.Path(t, "llm", "stories260K.gguf"))
	v, err := VocabFromMetadata(meta, errTestNotFound)
	if err != nil {
		t.Fatal(err)
	}
	// stories260K stores BOS 1, EOS 2, UNK 0 and PAD 0xFFFFFFFF (none); no add_* keys, so
	// SentencePiece's defaults apply.
	if v.Model != "llama" || len(v.Tokens) != 512 || len(v.Scores) != 512 || len(v.Types) != 512 ||
		v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || v.PAD != -1 || v.EOT != -1 ||
		!v.AddBOS || v.AddEOS || !v.AddSpacePrefix {
		t.Errorf("vocab: model %q, %d/%d/%d tokens/scores/types, BOS %d EOS %d UNK %d PAD %d EOT %d, add BOS %v EOS %v space %v",
			v.Model, len(v.Tokens), len(v.Scores), len(v.Types), v.BOS, v.EOS, v.UNK, v.PAD, v.EOT, v.AddBOS, v.AddEOS, v.AddSpacePrefix)
	}
	if _, err := FromMetadata(meta, errTestNotFound); err != nil {
		t.Fatal(err)
	}
	// Wrong types and missing required keys are errors; absent optional keys are not.
	for _, c := range []struct {
		key  string
		val  any
		want string
	}{
		{KeyModel, nil, `"tokenizer.ggml.model"`},
		{KeyTokens, nil, `"tokenizer.ggml.tokens"`},
		{KeyScores, []int32{1}, `"tokenizer.ggml.scores" is []int32`},
		{KeyBOS, "x", `"tokenizer.ggml.bos_token_id" is string`},
		{KeyEOS, uint64(1 << 40), "not a token id"},
		{KeyAddBOS, uint32(1), `"tokenizer.ggml.add_bos_token" is uint32`},
	} {
		m := testMeta{}
		for k, v := range meta {
			m[k] = v
		}
		if c.val == nil {
			delete(m, c.key)
		} else {
			m[c.key] = c.val
		}
		if _, err := VocabFromMetadata(m, errTestNotFound); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: err = %v, want it to contain %s", c.key, c.val, err, c.want)
		}
	}
	m := testMeta{}
	for k, v := range meta {
		if k != KeyScores && k != KeyTokenType && k != KeyBOS {
			m[k] = v
		}
	}
	v, err = VocabFromMetadata(m, errTestNotFound)
	if err != nil || v.Scores != nil || v.Types != nil || v.BOS != -1 {
		t.Errorf("optional keys absent: err %v, scores %v types %v BOS %d", err, v.Scores != nil, v.Types != nil, v.BOS)
	}
}
