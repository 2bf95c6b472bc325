// Package tokenizer turns text into token ids and back for the vocabularies stored in GGUF
// files: the SentencePiece-style "llama" model (score-driven merges, byte fallback) and the
// byte-level BPE "gpt2" model (ranked merges behind a regex-defined pre-tokenizer).
//
// The behaviour follows llama.cpp's tokenizer (llama-vocab.cpp), so that prompts tokenize to
// the same ids as there: the package is tested against llama.cpp's vocab files and test
// vectors. Where llama.cpp would lose information (invalid UTF-8 in byte-level BPE input) this
// package keeps the bytes, so that Decode(Encode(s)) == s.
//
// The package does not import the GGUF reader: FromMetadata takes anything with typed metadata
// getters (llm/gguf's *File has them), or a loader fills a Vocab itself (start from NewVocab
// for llama.cpp's defaults) and calls New.
package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// TokenType is the GGUF token type (tokenizer.ggml.token_type), as SentencePiece defines it.
type TokenType int32

// Token types as stored in GGUF files.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Tokenizer models (tokenizer.ggml.model).
const (
	ModelSPM = "llama" // SentencePiece: scores, byte fallback
	ModelBPE = "gpt2"  // byte-level BPE: merges
)

// Vocab is a tokenizer's description as a GGUF file stores it (the tokenizer.ggml.* keys).
// Build it with NewVocab so that absent ids are -1 and the flags have llama.cpp's defaults,
// then overwrite what the file holds.
type Vocab struct {
	Model  string    // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pre    string    // tokenizer.ggml.pre: "default", "llama3"/"llama-bpe", "qwen2", "gpt-2", ...
	Tokens []string  // tokenizer.ggml.tokens
	Scores []float32 // tokenizer.ggml.scores (nil: all zero)
	Types  []int32   // tokenizer.ggml.token_type (nil: all normal)
	Merges []string  // tokenizer.ggml.merges: "left right" pairs, rank = index (BPE only)

	// Special token ids; -1 when absent. GGUF stores them as uint32, where 0xFFFFFFFF also
	// means absent: int32(uint32) conversion gives -1 for it.
	BOS, EOS, UNK, PAD, EOT int32

	AddBOS         bool // tokenizer.ggml.add_bos_token
	AddEOS         bool // tokenizer.ggml.add_eos_token
	AddSpacePrefix bool // tokenizer.ggml.add_space_prefix (SentencePiece only)
}

// NewVocab returns a Vocab for the given model and pre-tokenizer with llama.cpp's defaults:
// no special ids; SentencePiece adds BOS and a space prefix; byte-level BPE adds BOS only for
// the llama3 family. Keys present in the file override these.
func NewVocab(model, pre string) Vocab {
	v := Vocab{Model: model, Pre: pre, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	switch model {
	case ModelSPM:
		v.AddBOS, v.AddSpacePrefix = true, true
	case ModelBPE:
		if p, ok := preByName[pre]; ok && p == preLlama3 {
			v.AddBOS = true
		}
	}
	return v
}

// Tokenizer encodes and decodes text for one vocabulary. It is immutable after New and safe
// for concurrent use.
type Tokenizer struct {
	spm    bool
	pre    preKind
	tokens []string
	types  []TokenType
	scores []float32
	pieces []string // what each token adds to decoded text ("" for control and unknown)

	toID map[string]int32 // every token's text (first id wins, as llama.cpp)

	// SentencePiece: tokens a merge may produce (byte, control, unknown and unused tokens are
	// excluded so that literal text such as "<0x41>" or "<s>" stays text), and the token of
	// each byte for byte fallback (-1: none).
	mergeable map[string]int32
	pairs     pairSet
	byteTok   [256]int32

	// Byte-level BPE: merge table keyed by the pair of token ids; the token of each raw byte
	// (through the GPT-2 bytes-to-unicode map).
	merges       map[uint64]bpeMerge
	bpeByte      [256]int32
	ignoreMerges bool

	special []int32 // control, user-defined and unknown tokens, longest text first

	bos, eos, unk, pad, eot int32
	addBOS, addEOS          bool
	addSpacePrefix          bool
	eog                     map[int32]bool
}

type bpeMerge struct {
	rank int32
	id   int32 // token of the merged text, -1 when the vocabulary lacks it
}

// eogTexts are token texts that end a generation in the chat formats llama.cpp knows.
var eogTexts = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<end_of_turn>": true,
	"<|endoftext|>": true, "<|eom_id|>": true, "<EOT>": true, "_<EOT>": true,
	"<|end_of_text|>": true, "<｜end▁of▁sentence｜>": true,
}

// New checks a vocabulary and builds its tokenizer. Errors name the offending entry.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: vocabulary has no tokens")
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("tokenizer: %d tokens is too many", n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{
		tokens: v.Tokens,
		scores: v.Scores,
		types:  make([]TokenType, n),
		toID:   make(map[string]int32, n),
		pieces: make([]string, n),
		bos:    v.BOS, eos: v.EOS, unk: v.UNK, pad: v.PAD, eot: v.EOT,
		addBOS: v.AddBOS, addEOS: v.AddEOS,
		eog: map[int32]bool{},
	}
	for _, e := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"UNK", v.UNK}, {"PAD", v.PAD}, {"EOT", v.EOT}} {
		if e.id < -1 || int(e.id) >= n {
			return nil, fmt.Errorf("tokenizer: %s id %d out of range [0, %d)", e.name, e.id, n)
		}
	}
	for i := range t.types {
		t.types[i] = TypeNormal
		if v.Types != nil {
			ty := TokenType(v.Types[i])
			if ty < TypeUndefined || ty > TypeByte {
				return nil, fmt.Errorf("tokenizer: token %d (%q) has unknown type %d", i, v.Tokens[i], ty)
			}
			t.types[i] = ty
		}
	}
	for i, s := range v.Tokens {
		if _, dup := t.toID[s]; !dup {
			t.toID[s] = int32(i)
		}
	}
	switch v.Model {
	case ModelSPM:
		t.spm = true
		t.addSpacePrefix = v.AddSpacePrefix
		if err := t.initSPM(); err != nil {
			return nil, err
		}
	case ModelBPE:
		p, ok := preByName[v.Pre]
		if !ok {
			return nil, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q for model %q (supported: %s)", v.Pre, v.Model, supportedPre())
		}
		t.pre = p
		t.ignoreMerges = p == preLlama3
		if err := t.initBPE(v.Merges); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q (want %q or %q)", v.Model, ModelSPM, ModelBPE)
	}
	for i, ty := range t.types {
		switch ty {
		case TypeControl, TypeUserDefined, TypeUnknown:
			if v.Tokens[i] != "" {
				t.special = append(t.special, int32(i))
			}
		}
		if eogTexts[v.Tokens[i]] {
			t.eog[int32(i)] = true
		}
	}
	// Longest first, so that a special token containing another is matched whole; ties by id
	// keep the order deterministic.
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(v.Tokens[t.special[a]]) > len(v.Tokens[t.special[b]])
	})
	for _, id := range []int32{t.eos, t.eot} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	return t, nil
}

// NumTokens is the vocabulary size.
func (t *Tokenizer) NumTokens() int { return len(t.tokens) }

// BOS returns the beginning-of-sequence id, -1 when absent.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id, -1 when absent.
func (t *Tokenizer) EOS() int32 { return t.eos }

// UNK returns the unknown-token id, -1 when absent.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD returns the padding id, -1 when absent.
func (t *Tokenizer) PAD() int32 { return t.pad }

// EOT returns the end-of-turn id, -1 when absent.
func (t *Tokenizer) EOT() int32 { return t.eot }

// AddsBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddsBOS() bool { return t.addBOS && t.bos >= 0 }

// AddsEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddsEOS() bool { return t.addEOS && t.eos >= 0 }

// IsEOG reports whether a token ends generation: EOS, EOT, or a token whose text is one of
// the end-of-turn markers of the common chat formats (<|eot_id|>, <|im_end|>, <|endoftext|>, ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// TokenType returns a token's type (TypeUndefined for an id out of range).
func (t *Tokenizer) TokenType(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// TokenText returns a token's raw vocabulary string (e.g. "▁the", "Ġthe", "<0x0A>", "<s>"),
// "" for an id out of range.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TokenID returns the id of a token given its raw vocabulary string.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	id, ok := t.toID[text]
	return id, ok
}

// TokenPiece returns the bytes a token adds to decoded text: spaces restored, a byte token's
// single byte (possibly part of a UTF-8 sequence: see StreamDecoder), nothing for control and
// unknown tokens (and for ids out of range). It never strips a leading space.
func (t *Tokenizer) TokenPiece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Decode turns ids back into text: the concatenation of the pieces, without control and
// unknown tokens; with a SentencePiece vocabulary that adds a space prefix, the space that
// Encode added in front of the text is removed again. Bytes are returned as they are, so the
// result may hold invalid UTF-8 when ids end inside a multi-byte character.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	strip := t.spm && t.addSpacePrefix
	for _, id := range ids {
		p := t.TokenPiece(id)
		if p == "" {
			continue
		}
		if strip {
			p = strings.TrimPrefix(p, " ")
			strip = false
		}
		b.WriteString(p)
	}
	return b.String()
}

// fragment is a piece of the input: raw text [start, end) or one special token.
type fragment struct {
	start, end int
	token      int32 // -1 for raw text
}

// partition splits text at the special tokens found in it, as llama.cpp does: special tokens
// are tried longest first, each split off wherever it occurs in the raw parts left so far.
// Control and unknown tokens are only looked for when parseSpecial; user-defined tokens always.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{0, len(text), -1}}
	for _, id := range t.special {
		ty := t.types[id]
		if !parseSpecial && (ty == TypeControl || ty == TypeUnknown) {
			continue
		}
		s := t.tokens[id]
		if len(s) > len(text) {
			continue
		}
		found := false
		for _, f := range frags {
			if f.token < 0 && strings.Contains(text[f.start:f.end], s) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		out := make([]fragment, 0, len(frags)+2)
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f)
				continue
			}
			pos := f.start
			for pos < f.end {
				i := strings.Index(text[pos:f.end], s)
				if i < 0 {
					break
				}
				if i > 0 {
					out = append(out, fragment{pos, pos + i, -1})
				}
				out = append(out, fragment{pos + i, pos + i + len(s), id})
				pos += i + len(s)
			}
			if pos < f.end {
				out = append(out, fragment{pos, f.end, -1})
			}
		}
		frags = out
	}
	return frags
}

// Encode turns text into token ids. addSpecial adds BOS and EOS as the vocabulary asks
// (AddsBOS, AddsEOS); parseSpecial lets control tokens written in the text (e.g. "<s>",
// "<|eot_id|>") become their ids instead of being tokenized as text. The only error is a
// vocabulary that cannot represent some byte of the text (no byte token and no UNK).
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.AddsBOS() {
		out = append(out, t.bos)
	}
	var frags []fragment
	if text != "" {
		frags = t.partition(text, parseSpecial)
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	var err error
	if t.spm {
		// A space goes in front of the text and after each special token, as SentencePiece
		// would see the text of each piece on its own.
		prevSpecial := true
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				prevSpecial = true
				continue
			}
			buf := sc.buf[:0]
			if t.addSpacePrefix && prevSpecial {
				buf = append(buf, spaceMark...)
			}
			buf = escapeSpaces(buf, text[f.start:f.end])
			sc.buf = buf
			if out, err = t.encodeSPM(sc, string(buf), out); err != nil {
				return nil, err
			}
			prevSpecial = false
		}
	} else {
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				continue
			}
			for _, w := range sc.words.split(t.pre, text[f.start:f.end]) {
				if out, err = t.encodeBPEWord(sc, w, out); err != nil {
					return nil, err
				}
			}
		}
	}
	if addSpecial && t.AddsEOS() {
		out = append(out, t.eos)
	}
	return out, nil
}

// StreamDecoder turns a stream of token ids into text for streaming output: it holds back the
// bytes of an incomplete UTF-8 sequence (byte-fallback tokens spell a character one byte per
// token) until the sequence completes, so each returned string is whole characters. Bytes
// that can never become valid UTF-8 are passed through as they are. It does not strip the
// SentencePiece space prefix: a generated token's leading space belongs to the text.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a StreamDecoder with nothing pending.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add appends a token and returns the text that is now complete (possibly "").
func (d *StreamDecoder) Add(id int32) string {
	d.pending = append(d.pending, d.t.TokenPiece(id)...)
	n := len(d.pending)
	// Hold back a trailing rune start whose continuation bytes have not all arrived yet.
	keep := 0
	for k := 1; k <= utf8.UTFMax-1 && k <= n; k++ {
		if utf8.RuneStart(d.pending[n-k]) {
			if !utf8.FullRune(d.pending[n-k:]) {
				keep = k
			}
			break
		}
	}
	s := string(d.pending[:n-keep])
	d.pending = append(d.pending[:0], d.pending[n-keep:]...)
	return s
}

// Flush returns whatever is still held back (an incomplete sequence at the end of the stream)
// and resets the decoder.
func (d *StreamDecoder) Flush() string {
	s := string(d.pending)
	d.pending = d.pending[:0]
	return s
}
