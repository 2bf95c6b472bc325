package tokenizer

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Byte-level BPE first cuts text into words with a regular expression (the pre-tokenizer),
// then merges inside each word only. The expressions use look-ahead, which Go's regexp lacks,
// so each one is written here as a single left-to-right scan that returns the same words as
// the expression's leftmost-first (Perl/PCRE) matching; tests check each scan against a
// backtracking reading of its expression.
//
// Character classes: \p{L} is unicode.IsLetter, \p{N} unicode.IsNumber, \s unicode.IsSpace
// (the Unicode White_Space set, as llama.cpp's tables). A byte that is not valid UTF-8 counts
// as one character outside all three classes, like U+FFFD; it stays in its word unchanged.

type preKind int

const (
	preDefault preKind = iota
	preGPT2
	preLlama3
	preQwen2
)

// preByName maps tokenizer.ggml.pre values to pre-tokenizers, as llama.cpp does for the
// families implemented here.
var preByName = map[string]preKind{
	"":                 preDefault, // files older than the key: llama.cpp's default
	"default":          preDefault,
	"gpt-2":            preGPT2,
	"gpt2":             preGPT2,
	"phi-2":            preGPT2,
	"llama3":           preLlama3,
	"llama-v3":         preLlama3,
	"llama-bpe":        preLlama3,
	"falcon3":          preLlama3,
	"qwen2":            preQwen2,
	"deepseek-r1-qwen": preQwen2,
}

func supportedPre() string {
	var names []string
	for k := range preByName {
		if k != "" {
			names = append(names, "\""+k+"\"")
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Character class bits. fAny is set for every character, so that a zero class means "past the
// end of the text" (the regexes' look-ahead sees nothing there).
const (
	fLetter uint8 = 1 << iota
	fNumber
	fSpace
	fAny
)

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return fAny | fLetter
		case '0' <= r && r <= '9':
			return fAny | fNumber
		case r == ' ', '\t' <= r && r <= '\r':
			return fAny | fSpace
		}
		return fAny
	}
	switch {
	case unicode.IsLetter(r):
		return fAny | fLetter
	case unicode.IsNumber(r):
		return fAny | fNumber
	case unicode.IsSpace(r):
		return fAny | fSpace
	}
	return fAny
}

// wordSplitter holds the scratch buffers of one Encode call.
type wordSplitter struct {
	cps   []rune  // code points, with a -1 sentinel after the last
	cls   []uint8 // their classes, with a 0 sentinel
	offs  []int   // byte offset of each code point, and len(text)
	ends  []int   // word ends, in code points
	words []string
}

func (w *wordSplitter) decode(text string) {
	w.cps, w.cls, w.offs = w.cps[:0], w.cls[:0], w.offs[:0]
	for off := 0; off < len(text); {
		r, n := utf8.DecodeRuneInString(text[off:])
		w.cps = append(w.cps, r)
		w.cls = append(w.cls, classOf(r))
		w.offs = append(w.offs, off)
		off += n
	}
	w.offs = append(w.offs, len(text))
	// Sentinels: two of each so that scans may look one past the end without a bounds check.
	w.cps = append(w.cps, -1, -1)
	w.cls = append(w.cls, 0, 0)
}

// split cuts text into the words of the given pre-tokenizer. The words are substrings of text
// and cover it exactly; the slice is reused by the next call.
func (w *wordSplitter) split(p preKind, text string) []string {
	w.words = w.words[:0]
	if text == "" {
		return w.words
	}
	switch p {
	case preGPT2:
		w.scan(text, scanGPT2)
	case preLlama3:
		w.scan(text, func(cps []rune, cls []uint8, n int, emit func(int)) { scanLlama3(cps, cls, n, 3, emit) })
	case preQwen2:
		w.scan(text, func(cps []rune, cls []uint8, n int, emit func(int)) { scanLlama3(cps, cls, n, 1, emit) })
	default:
		w.splitDefault(text)
	}
	return w.words
}

type scanFunc func(cps []rune, cls []uint8, n int, emit func(end int))

func (w *wordSplitter) scan(text string, f scanFunc) {
	w.decode(text)
	n := len(w.offs) - 1
	prev := 0
	f(w.cps, w.cls, n, func(end int) {
		if end > prev {
			w.words = append(w.words, text[w.offs[prev]:w.offs[end]])
			prev = end
		}
	})
}

// scanGPT2 implements GPT-2's pre-tokenizer regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// The look-ahead alternative takes a run of white space but leaves its last character to
// start the next word when a non-space follows (so " x" stays together after "  ").
func scanGPT2(cps []rune, cls []uint8, n int, emit func(int)) {
	for pos := 0; pos < n; {
		c := cps[pos]
		// 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
		if c == '\'' && pos+1 < n {
			c1, c2 := cps[pos+1], cps[pos+2] // cps[pos+2] is a sentinel past the end
			if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
				pos += 2
				emit(pos)
				continue
			}
			if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				pos += 3
				emit(pos)
				continue
			}
		}
		// An optional space attaches to the run of letters, digits or other symbols after it.
		k := cls[pos]
		start := pos
		if c == ' ' {
			k = cls[pos+1]
			start = pos + 1
		}
		switch {
		case k&fLetter != 0: // ?\p{L}+
			pos = start
			for cls[pos]&fLetter != 0 {
				pos++
			}
			emit(pos)
			continue
		case k&fNumber != 0: // ?\p{N}+
			pos = start
			for cls[pos]&fNumber != 0 {
				pos++
			}
			emit(pos)
			continue
		case k != 0 && k&fSpace == 0: // ?[^\s\p{L}\p{N}]+
			pos = start
			for k := cls[pos]; k != 0 && k&(fLetter|fNumber|fSpace) == 0; k = cls[pos] {
				pos++
			}
			emit(pos)
			continue
		}
		ws := 0
		for cls[pos+ws]&fSpace != 0 {
			ws++
		}
		switch {
		case ws > 1 && pos+ws < n: // \s+(?!\S): all but the last space before a non-space
			pos += ws - 1
		case ws > 0: // \s+ (a run reaching the end, or one space before a non-space)
			pos += ws
		default: // unreachable: every character is a letter, number, space or other
			pos++
		}
		emit(pos)
	}
}

// scanLlama3 implements the Llama 3 pre-tokenizer regex (maxDigits 3)
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and, with maxDigits 1, Qwen2's, which differs only in taking digits one at a time (\p{N}).
// The case-insensitive contractions match ASCII letters either case, as llama.cpp's rewrite
// '[sS]|'[tT]|'[rR][eE]|... does.
func scanLlama3(cps []rune, cls []uint8, n int, maxDigits int, emit func(int)) {
	lower := func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	for pos := 0; pos < n; {
		c, k := cps[pos], cls[pos]
		// (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if c == '\'' && pos+1 < n {
			c1, c2 := lower(cps[pos+1]), lower(cps[pos+2])
			if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
				pos += 2
				emit(pos)
				continue
			}
			if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				pos += 3
				emit(pos)
				continue
			}
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+: one optional non-letter, non-digit, non-newline (a space,
		// a tab, a quote, ...) then letters.
		if c != '\r' && c != '\n' && k&fNumber == 0 && (k&fLetter != 0 || cls[pos+1]&fLetter != 0) {
			pos++
			for cls[pos]&fLetter != 0 {
				pos++
			}
			emit(pos)
			continue
		}
		// \p{N}{1,3} (Qwen2: \p{N})
		if k&fNumber != 0 {
			for d := 0; cls[pos]&fNumber != 0; {
				pos++
				if d++; d == maxDigits {
					emit(pos)
					d = 0
				}
			}
			emit(pos)
			continue
		}
		// ?[^\s\p{L}\p{N}]+[\r\n]*
		k2 := k
		if c == ' ' {
			k2 = cls[pos+1]
		}
		if k2 != 0 && k2&(fLetter|fNumber|fSpace) == 0 {
			if c == ' ' {
				pos++
			}
			for k := cls[pos]; k != 0 && k&(fLetter|fNumber|fSpace) == 0; k = cls[pos] {
				pos++
			}
			for cps[pos] == '\r' || cps[pos] == '\n' {
				pos++
			}
			emit(pos)
			continue
		}
		ws, lastNL := 0, -1
		for cls[pos+ws]&fSpace != 0 {
			if r := cps[pos+ws]; r == '\r' || r == '\n' {
				lastNL = pos + ws + 1
			}
			ws++
		}
		switch {
		case lastNL >= 0: // \s*[\r\n]+: white space up to the last newline of the run
			pos = lastNL
		case ws > 1 && pos+ws < n: // \s+(?!\S)
			pos += ws - 1
		case ws > 0: // \s+
			pos += ws
		default:
			pos++
		}
		emit(pos)
	}
}

// llama.cpp's default BPE pre-tokenizer is four expressions applied in turn, each cutting the
// pieces the previous one made (text between matches stays a piece of its own):
//
//	[\p{P}\$\+<=>\^~\|]+
//	GPT-2's expression (scanGPT2)
//	\p{N}+
//	[0-9][0-9][0-9]
//
// None of the other three needs look-ahead, so Go's regexp does them.
var (
	rePunct   = regexp.MustCompile(`[\p{P}\$\+<=>\^~\|]+`)
	reNumbers = regexp.MustCompile(`\p{N}+`)
	re3Digits = regexp.MustCompile(`[0-9][0-9][0-9]`)
)

func (w *wordSplitter) splitDefault(text string) {
	pieces := splitKeep(rePunct, []string{text})
	var words []string
	for _, p := range pieces {
		w.words = w.words[:0]
		w.scan(p, scanGPT2)
		words = append(words, w.words...)
	}
	words = splitKeep(reNumbers, words)
	words = splitKeep(re3Digits, words)
	w.words = append(w.words[:0], words...)
}

// splitKeep cuts each piece at the matches of re, keeping the text between matches.
func splitKeep(re *regexp.Regexp, pieces []string) []string {
	var out []string
	for _, p := range pieces {
		prev := 0
		for _, m := range re.FindAllStringIndex(p, -1) {
			if m[0] > prev {
				out = append(out, p[prev:m[0]])
			}
			if m[1] > m[0] {
				out = append(out, p[m[0]:m[1]])
			}
			prev = m[1]
		}
		if prev < len(p) {
			out = append(out, p[prev:])
		}
	}
	return out
}
