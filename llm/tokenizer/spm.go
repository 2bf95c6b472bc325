package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// spaceMark is SentencePiece's stand-in for a space, U+2581 LOWER ONE EIGHTH BLOCK.
const spaceMark = "\u2581"

// escapeSpaces appends s to dst with every ' ' replaced by spaceMark.
func escapeSpaces(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, spaceMark...)
		s = s[i+1:]
	}
}

const hexDigits = "0123456789ABCDEF"

func (t *Tokenizer) initSPM() error {
	t.mergeable = make(map[string]int32, len(t.tokens))
	for i, s := range t.tokens {
		switch t.types[i] {
		case TypeControl, TypeUnknown, TypeByte, TypeUnused:
			continue
		}
		if _, dup := t.mergeable[s]; !dup {
			t.mergeable[s] = int32(i)
		}
	}
	for b := range 256 {
		t.byteTok[b] = -1
		name := string([]byte{'<', '0', 'x', hexDigits[b>>4], hexDigits[b&15], '>'})
		if id, ok := t.toID[name]; ok {
			t.byteTok[b] = id
		} else if id, ok := t.toID[string([]byte{byte(b)})]; ok {
			// Some vocabularies spell a byte as itself (llama.cpp falls back to this too).
			t.byteTok[b] = id
		}
	}
	for i, s := range t.tokens {
		switch t.types[i] {
		case TypeControl, TypeUnknown:
			// Not text: Decode drops them.
		case TypeUserDefined:
			t.pieces[i] = s
		case TypeByte:
			b, ok := parseByteToken(s)
			if !ok {
				return fmt.Errorf("tokenizer: byte token %d is %q, want <0xXX>", i, s)
			}
			t.pieces[i] = string([]byte{b})
		default:
			t.pieces[i] = strings.ReplaceAll(s, spaceMark, " ")
		}
	}
	return nil
}

// parseByteToken reads "<0xXX>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(s[3:5]) {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | (c - '0')
		case 'A' <= c && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		case 'a' <= c && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// spmSymbol is a run of text [off, off+n) in a doubly linked list of the current segmentation;
// n == 0 marks a symbol merged into its left neighbour.
type spmSymbol struct {
	off, n     int32
	prev, next int32
}

type spmBigram struct {
	left, right int32
	score       float32
	size        int32
}

// before orders candidate merges as SentencePiece does: highest score first, then leftmost.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// encodeSPM tokenizes text (spaces already escaped) by SentencePiece's greedy BPE: start from
// characters, repeatedly merge the adjacent pair whose concatenation is the vocabulary token
// with the highest score, then emit each symbol's token, or its bytes' tokens when the
// vocabulary lacks it (byte fallback).
func (t *Tokenizer) encodeSPM(text string, out []int32) ([]int32, error) {
	if len(text) > 1<<30 {
		return nil, fmt.Errorf("tokenizer: text of %d bytes is too long", len(text))
	}
	syms := make([]spmSymbol, 0, len(text))
	for off := 0; off < len(text); {
		// Invalid UTF-8 becomes one-byte symbols that byte fallback then emits unchanged.
		_, n := utf8.DecodeRuneInString(text[off:])
		i := int32(len(syms))
		syms = append(syms, spmSymbol{off: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	if len(syms) == 0 {
		return out, nil
	}
	syms[len(syms)-1].next = -1

	var q pqueue[spmBigram]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		id, ok := t.mergeable[text[a.off:b.off+b.n]]
		if !ok {
			return
		}
		var score float32
		if t.scores != nil {
			score = t.scores[id]
		}
		q.push(spmBigram{left: l, right: r, score: score, size: a.n + b.n})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for q.len() > 0 {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		// Skip candidates made stale by an earlier merge of either side.
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		try(l.prev, bg.left)
		try(bg.left, l.next)
	}
	for i := int32(0); i != -1; i = syms[i].next {
		s := syms[i]
		piece := text[s.off : s.off+s.n]
		if id, ok := t.mergeable[piece]; ok {
			out = append(out, id)
			continue
		}
		missing := -1
		for j := 0; j < len(piece); j++ {
			if t.byteTok[piece[j]] < 0 {
				missing = j
				break
			}
		}
		if missing < 0 {
			for j := 0; j < len(piece); j++ {
				out = append(out, t.byteTok[piece[j]])
			}
			continue
		}
		if t.unk < 0 {
			return nil, fmt.Errorf("tokenizer: byte 0x%02x has no token (no <0x%02X> and no UNK in the vocabulary)", piece[missing], piece[missing])
		}
		// One UNK for the whole character, as SentencePiece does without byte fallback.
		out = append(out, t.unk)
	}
	return out, nil
}
