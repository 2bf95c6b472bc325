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
	t.buildPairs()
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

// pairSet records which two characters ever stand next to each other inside a token a merge
// can make. Where two adjacent characters of the text are not such a pair, no merge can ever
// join them, so the text falls apart there into chunks that are tokenized independently with
// the same result (a merge's order among those of its own chunk is unchanged): prose splits
// into words, and the heap stays small enough to live in cache.
type pairSet struct {
	ascii [128 * 128 / 64]uint64
	other map[uint64]struct{}
}

func (p *pairSet) add(a, b rune) {
	if a < 128 && b < 128 && a >= 0 && b >= 0 {
		i := a<<7 | b
		p.ascii[i>>6] |= 1 << (i & 63)
		return
	}
	p.other[uint64(uint32(a))<<32|uint64(uint32(b))] = struct{}{}
}

func (p *pairSet) has(a, b rune) bool {
	if a < 128 && b < 128 && a >= 0 && b >= 0 {
		i := a<<7 | b
		return p.ascii[i>>6]&(1<<(i&63)) != 0
	}
	_, ok := p.other[uint64(uint32(a))<<32|uint64(uint32(b))]
	return ok
}

// buildPairs fills t.pairs from the mergeable tokens. Invalid UTF-8 reads as U+FFFD on both
// sides (text and tokens), which can only keep chunks together, never wrongly cut them.
func (t *Tokenizer) buildPairs() {
	t.pairs.other = map[uint64]struct{}{}
	for s := range t.mergeable {
		prev := rune(-1)
		for _, r := range s {
			if prev >= 0 {
				t.pairs.add(prev, r)
			}
			prev = r
		}
	}
}

// encodeSPM tokenizes text (spaces already escaped) by SentencePiece's greedy BPE: start from
// characters, repeatedly merge the adjacent pair whose concatenation is the vocabulary token
// with the highest score (leftmost among equals), then emit each symbol's token, or its bytes'
// tokens when the vocabulary lacks it (byte fallback).
func (t *Tokenizer) encodeSPM(sc *scratch, text string, out []int32) ([]int32, error) {
	if len(text) > 1<<30 {
		return nil, fmt.Errorf("tokenizer: text of %d bytes is too long", len(text))
	}
	start := 0
	prev := rune(-1)
	var err error
	for off := 0; off < len(text); {
		r, n := rune(text[off]), 1
		if r >= utf8.RuneSelf {
			// Invalid UTF-8 becomes one-byte symbols that byte fallback emits unchanged.
			r, n = utf8.DecodeRuneInString(text[off:])
		}
		if prev >= 0 && !t.pairs.has(prev, r) {
			if out, err = t.encodeSPMChunk(sc, text, start, off, out); err != nil {
				return nil, err
			}
			start = off
		}
		prev = r
		off += n
	}
	return t.encodeSPMChunk(sc, text, start, len(text), out)
}

// encodeSPMChunk runs the merge loop on text[start:end].
func (t *Tokenizer) encodeSPMChunk(sc *scratch, text string, start, end int, out []int32) ([]int32, error) {
	syms := sc.spm[:0]
	for off := start; off < end; {
		n := 1
		if text[off] >= utf8.RuneSelf {
			_, n = utf8.DecodeRuneInString(text[off:end])
		}
		i := int32(len(syms))
		syms = append(syms, spmSymbol{off: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	sc.spm = syms
	if len(syms) == 0 {
		return out, nil
	}
	syms[len(syms)-1].next = -1
	if len(syms) == 1 {
		s := syms[0]
		if id, ok := t.mergeable[text[s.off:s.off+s.n]]; ok {
			return append(out, id), nil
		}
	}

	q := sc.q[:0]
	try := func(l, r int32) {
		a, b := syms[l], syms[r]
		id, ok := t.mergeable[text[a.off:b.off+b.n]]
		if !ok {
			return
		}
		var score float32
		if t.scores != nil {
			score = t.scores[id]
		}
		q.push(mergeCand{key: spmKey(score, l), right: r, a: a.n + b.n})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for len(q) > 0 {
		bg := q.pop()
		sc.pops++
		left := candLeft(bg)
		l, r := &syms[left], &syms[bg.right]
		// Skip candidates made stale by an earlier merge of either side: a symbol only grows
		// by taking in its right neighbour, so unchanged sizes mean unchanged neighbours.
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.a {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = left
		}
		if l.prev >= 0 {
			try(l.prev, left)
		}
		if l.next >= 0 {
			try(left, l.next)
		}
	}
	sc.q = q
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
