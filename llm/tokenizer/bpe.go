package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// byteRune is GPT-2's bytes-to-unicode map: printable Latin-1 bytes stand for themselves, the
// other 68 bytes (controls, space, DEL, NBSP, soft hyphen, ...) are moved in order to U+0100 and
// up, so that every byte is a visible character in the vocabulary and the merges.
var byteRune [256]rune

// runeByte inverts byteRune.
var runeByte = map[rune]byte{}

func init() {
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = rune(256 + n)
			n++
		}
		runeByte[byteRune[b]] = byte(b)
	}
}

func (t *Tokenizer) initBPE(merges []string) error {
	for b := range 256 {
		t.bpeByte[b] = -1
		if id, ok := t.toID[string(byteRune[b])]; ok {
			t.bpeByte[b] = id
		}
	}
	t.merges = make(map[uint64]bpeMerge, len(merges))
	for i, m := range merges {
		// The separator is the first space after the first character: a left part never starts
		// with a raw space in byte-level BPE, but a vocabulary may hold one, as llama.cpp allows.
		sp := -1
		if m != "" {
			_, n := utf8.DecodeRuneInString(m)
			if j := strings.IndexByte(m[n:], ' '); j >= 0 {
				sp = n + j
			}
		}
		if sp < 0 {
			return fmt.Errorf("tokenizer: merge %d is %q, want \"left right\"", i, m)
		}
		l, lok := t.toID[m[:sp]]
		r, rok := t.toID[m[sp+1:]]
		if !lok || !rok {
			// A merge of pieces the vocabulary lacks can never apply.
			continue
		}
		key := uint64(uint32(l))<<32 | uint64(uint32(r))
		if _, dup := t.merges[key]; dup {
			continue // the first (lowest) rank wins
		}
		id, ok := t.toID[m[:sp]+m[sp+1:]]
		if !ok {
			id = -1
		}
		t.merges[key] = bpeMerge{rank: int32(i), id: id}
	}
	for i, s := range t.tokens {
		switch t.types[i] {
		case TypeControl, TypeUnknown:
		case TypeUserDefined:
			t.pieces[i] = s
		default:
			t.pieces[i] = unmapBytes(s)
		}
	}
	return nil
}

// unmapBytes turns a byte-level BPE token back into the bytes it stands for; a character
// outside the map is kept as its own UTF-8.
func unmapBytes(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if c, ok := runeByte[r]; ok {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// bpeSymbol is the byte run [off, off+n) of a word in a doubly linked list, with its token
// (-1 when the vocabulary lacks it); n == 0 marks a symbol merged into its left neighbour.
type bpeSymbol struct {
	off, n     int32
	prev, next int32
	id         int32
}

// encodeBPEWord tokenizes one pre-tokenized word: its bytes are mapped to characters, then the
// adjacent pair with the lowest merge rank (leftmost among equals) is merged until no pair has
// a rank.
func (t *Tokenizer) encodeBPEWord(sc *scratch, word string, out []int32) ([]int32, error) {
	if len(word) > 1<<30 {
		return nil, fmt.Errorf("tokenizer: word of %d bytes is too long", len(word))
	}
	if len(word) == 1 && t.bpeByte[word[0]] >= 0 {
		return append(out, t.bpeByte[word[0]]), nil
	}
	if t.ignoreMerges {
		// llama3: a word that is a token is taken whole, whatever the merges would make of it.
		mapped := sc.buf[:0]
		for i := 0; i < len(word); i++ {
			mapped = utf8.AppendRune(mapped, byteRune[word[i]])
		}
		sc.buf = mapped
		if id, ok := t.toID[string(mapped)]; ok {
			return append(out, id), nil
		}
	}
	syms := sc.bpe[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, bpeSymbol{off: int32(i), n: 1, prev: int32(i - 1), next: int32(i + 1), id: t.bpeByte[word[i]]})
	}
	sc.bpe = syms
	if len(syms) == 0 {
		return out, nil
	}
	syms[len(syms)-1].next = -1
	q := sc.q[:0]
	try := func(l, r int32) {
		a, b := syms[l].id, syms[r].id
		if a < 0 || b < 0 {
			return
		}
		m, ok := t.merges[uint64(uint32(a))<<32|uint64(uint32(b))]
		if !ok {
			return
		}
		q.push(mergeCand{key: bpeKey(m.rank, l), right: r, a: a, b: b, c: m.id})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for len(q) > 0 {
		bg := q.pop()
		sc.pops++
		left := candLeft(bg)
		l, r := &syms[left], &syms[bg.right]
		// Stale when either side has changed since the candidate was made: tokens only grow, so
		// unchanged ids mean unchanged, still adjacent symbols.
		if l.n == 0 || r.n == 0 || l.id != bg.a || r.id != bg.b || l.next != bg.right {
			continue
		}
		l.n += r.n
		l.id = bg.c
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
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		// The vocabulary lacks this run: emit its bytes' tokens, or UNK.
		for j := s.off; j < s.off+s.n; j++ {
			id := t.bpeByte[word[j]]
			if id < 0 {
				id = t.unk
			}
			if id < 0 {
				return nil, fmt.Errorf("tokenizer: byte 0x%02x has no token (no %q and no UNK in the vocabulary)", word[j], string(byteRune[word[j]]))
			}
			out = append(out, id)
		}
	}
	return out, nil
}
