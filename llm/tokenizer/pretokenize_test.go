package tokenizer

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// Expected splits below are derived by hand from each expression, alternative by alternative
// (leftmost-first: the first alternative that matches at a position wins; quantifiers are
// greedy and give back characters only when the rest of their alternative needs it).
func TestPreTokenizeByHand(t *testing.T) {
	cases := []struct {
		text                string
		gpt2, llama3, qwen2 []string
	}{
		{"Hello world", []string{"Hello", " world"}, []string{"Hello", " world"}, []string{"Hello", " world"}},
		// Contractions: GPT-2 is case-sensitive, Llama 3 and Qwen2 are not.
		{"I'm here", []string{"I", "'m", " here"}, []string{"I", "'m", " here"}, []string{"I", "'m", " here"}},
		{"I'M", []string{"I", "'", "M"}, []string{"I", "'M"}, []string{"I", "'M"}},
		{"we'LL", []string{"we", "'", "LL"}, []string{"we", "'LL"}, []string{"we", "'LL"}},
		{"don't", []string{"don", "'t"}, []string{"don", "'t"}, []string{"don", "'t"}},
		// A quote before letters: GPT-2 splits it off as a symbol; Llama 3 lets one
		// non-letter, non-digit, non-newline character lead the letters.
		{"'hello", []string{"'", "hello"}, []string{"'hello"}, []string{"'hello"}},
		{"\tHello", []string{"\t", "Hello"}, []string{"\tHello"}, []string{"\tHello"}},
		// Digits: GPT-2 takes a run, Llama 3 at most three, Qwen2 one at a time.
		{"12345", []string{"12345"}, []string{"123", "45"}, []string{"1", "2", "3", "4", "5"}},
		{" 1234567", []string{" 1234567"}, []string{" ", "123", "456", "7"}, []string{" ", "1", "2", "3", "4", "5", "6", "7"}},
		{"3.14", []string{"3", ".", "14"}, []string{"3", ".", "14"}, []string{"3", ".", "1", "4"}},
		{"$100", []string{"$", "100"}, []string{"$", "100"}, []string{"$", "1", "0", "0"}},
		// \s+(?!\S): a space run before a word leaves its last space to the word.
		{"a  b", []string{"a", " ", " b"}, []string{"a", " ", " b"}, []string{"a", " ", " b"}},
		{"x   ", []string{"x", "   "}, []string{"x", "   "}, []string{"x", "   "}},
		// Newlines: Llama 3's \s*[\r\n]+ keeps white space up to the last newline together.
		{"x\n\ny", []string{"x", "\n", "\n", "y"}, []string{"x", "\n\n", "y"}, []string{"x", "\n\n", "y"}},
		{"  \n  x", []string{"  \n ", " x"}, []string{"  \n", " ", " x"}, []string{"  \n", " ", " x"}},
		{"hello!!\n\nworld", []string{"hello", "!!", "\n", "\n", "world"}, []string{"hello", "!!\n\n", "world"}, []string{"hello", "!!\n\n", "world"}},
		{" ?", []string{" ?"}, []string{" ?"}, []string{" ?"}},
		{"a ?!b", []string{"a", " ?!", "b"}, []string{"a", " ?!", "b"}, []string{"a", " ?!", "b"}},
		// Non-ASCII letters, numbers (² is \p{No}) and symbols.
		{"naïve café", []string{"naïve", " café"}, []string{"naïve", " café"}, []string{"naïve", " café"}},
		{"x²3", []string{"x", "²3"}, []string{"x", "²3"}, []string{"x", "²", "3"}},
		{"😀😀 ok", []string{"😀😀", " ok"}, []string{"😀😀", " ok"}, []string{"😀😀", " ok"}},
		{"中文 字", []string{"中文", " 字"}, []string{"中文", " 字"}, []string{"中文", " 字"}},
		// U+00A0 is white space but not ' ': it never leads a word in GPT-2, but may in Llama 3.
		{"a\u00a0b", []string{"a", "\u00a0", "b"}, []string{"a", "\u00a0b"}, []string{"a", "\u00a0b"}},
		{"", nil, nil, nil},
	}
	var ws wordSplitter
	for _, c := range cases {
		for _, k := range []struct {
			name string
			p    preKind
			want []string
		}{{"gpt2", preGPT2, c.gpt2}, {"llama3", preLlama3, c.llama3}, {"qwen2", preQwen2, c.qwen2}} {
			got := append([]string(nil), ws.split(k.p, c.text)...)
			if len(got) == 0 && len(k.want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, k.want) {
				t.Errorf("%s %q: got %q, want %q", k.name, c.text, got, k.want)
			}
		}
	}
}

// A small backtracking matcher, enough for the pre-tokenizer expressions: an alternation of
// sequences of single-character classes with greedy quantifiers, optionally followed by a
// negative look-ahead for one class. It follows regex semantics literally (try alternatives in
// order, give back greedy repetitions one at a time), unlike the single-pass scans it checks.
type reItem struct {
	class    func(rune) bool
	min, max int // max < 0: unbounded
}

type reAlt struct {
	items   []reItem
	notNext func(rune) bool // (?!class) after the sequence; nil: none
}

func lit(cs ...rune) func(rune) bool {
	return func(r rune) bool {
		for _, c := range cs {
			if r == c {
				return true
			}
		}
		return false
	}
}

var (
	isL      = unicode.IsLetter
	isN      = unicode.IsNumber
	isS      = unicode.IsSpace
	notS     = func(r rune) bool { return !unicode.IsSpace(r) }
	notSLN   = func(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }
	notCRLLN = func(r rune) bool { return r != '\r' && r != '\n' && !isL(r) && !isN(r) }
	crlf     = lit('\r', '\n')
)

func one(c func(rune) bool) reItem  { return reItem{c, 1, 1} }
func opt(c func(rune) bool) reItem  { return reItem{c, 0, 1} }
func plus(c func(rune) bool) reItem { return reItem{c, 1, -1} }
func star(c func(rune) bool) reItem { return reItem{c, 0, -1} }

func contractions(ci bool) []reAlt {
	var alts []reAlt
	for _, s := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		items := []reItem{one(lit('\''))}
		for _, c := range s {
			if ci {
				items = append(items, one(lit(c, unicode.ToUpper(c))))
			} else {
				items = append(items, one(lit(c)))
			}
		}
		alts = append(alts, reAlt{items: items})
	}
	return alts
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
var refGPT2 = append(contractions(false),
	reAlt{items: []reItem{opt(lit(' ')), plus(isL)}},
	reAlt{items: []reItem{opt(lit(' ')), plus(isN)}},
	reAlt{items: []reItem{opt(lit(' ')), plus(notSLN)}},
	reAlt{items: []reItem{plus(isS)}, notNext: notS},
	reAlt{items: []reItem{plus(isS)}},
)

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func refLlama3(maxDigits int) []reAlt {
	return append(contractions(true),
		reAlt{items: []reItem{opt(notCRLLN), plus(isL)}},
		reAlt{items: []reItem{{isN, 1, maxDigits}}},
		reAlt{items: []reItem{opt(lit(' ')), plus(notSLN), star(crlf)}},
		reAlt{items: []reItem{star(isS), plus(crlf)}},
		reAlt{items: []reItem{plus(isS)}, notNext: notS},
		reAlt{items: []reItem{plus(isS)}},
	)
}

func (a reAlt) match(rs []rune, pos, item int) int {
	if item == len(a.items) {
		if a.notNext != nil && pos < len(rs) && a.notNext(rs[pos]) {
			return -1
		}
		return pos
	}
	it := a.items[item]
	k := 0
	for pos+k < len(rs) && (it.max < 0 || k < it.max) && it.class(rs[pos+k]) {
		k++
	}
	for ; k >= it.min; k-- {
		if end := a.match(rs, pos+k, item+1); end >= 0 {
			return end
		}
	}
	return -1
}

// refSplit finds all matches left to right; text no alternative matches becomes a piece of
// its own (the expressions here leave none).
func refSplit(alts []reAlt, text string) []string {
	var rs []rune
	var offs []int
	for off, r := range text { // invalid bytes come out as U+FFFD, one byte wide
		rs = append(rs, r)
		offs = append(offs, off)
	}
	offs = append(offs, len(text))
	var out []string
	gap := 0
	for pos := 0; pos < len(rs); {
		end := -1
		for _, a := range alts {
			if end = a.match(rs, pos, 0); end > pos {
				break
			}
		}
		if end <= pos {
			pos++
			continue
		}
		if gap < pos {
			out = append(out, text[offs[gap]:offs[pos]])
		}
		out = append(out, text[offs[pos]:offs[end]])
		pos, gap = end, end
	}
	if gap < len(rs) {
		out = append(out, text[offs[gap]:])
	}
	return out
}

// preAlphabet mixes every class boundary the expressions care about.
var preAlphabet = []string{
	"a", "B", "s", "S", "t", "T", "e", "E", "r", "R", "v", "l", "L", "m", "M", "d", "D",
	"'", "'", " ", " ", " ", "\t", "\n", "\r", "0", "7", "²", "é", "ß", "中", "!", ".", "-",
	"\u00a0", "\u2009", "\u3000", "😀", "\u0301", "\xff", "\xe4",
}

func randomPreText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(preAlphabet[r.IntN(len(preAlphabet))])
	}
	return b.String()
}

// TestPreTokenizeMatchesRegex checks the scans against the backtracking reading of their
// expressions on random text.
func TestPreTokenizeMatchesRegex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ws wordSplitter
	kinds := []struct {
		name string
		p    preKind
		ref  []reAlt
	}{{"gpt2", preGPT2, refGPT2}, {"llama3", preLlama3, refLlama3(3)}, {"qwen2", preQwen2, refLlama3(1)}}
	n := 4000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		text := randomPreText(r, 1+i%24)
		for _, k := range kinds {
			got := ws.split(k.p, text)
			want := refSplit(k.ref, text)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %q:\n got  %q\n want %q", k.name, text, got, want)
			}
			if strings.Join(got, "") != text {
				t.Fatalf("%s %q: words %q do not cover the text", k.name, text, got)
			}
		}
	}
}

// The default pre-tokenizer: punctuation runs, then GPT-2's expression, then digit runs, then
// groups of three ASCII digits, each cutting the previous pieces.
func TestPreTokenizeDefault(t *testing.T) {
	var ws wordSplitter
	for _, c := range []struct {
		text string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"x 12345", []string{"x", " ", "123", "45"}},
		{"a+=b", []string{"a", "+=", "b"}},
	} {
		got := ws.split(preDefault, c.text)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		text := randomPreText(r, 30)
		if got := strings.Join(ws.split(preDefault, text), ""); got != text {
			t.Fatalf("default words of %q join to %q", text, got)
		}
	}
}
