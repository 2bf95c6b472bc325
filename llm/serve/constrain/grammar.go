// Package constrain enforces structured output by constrained decoding: a JSON schema (or
// "any JSON object") is compiled into a context-free grammar over bytes, a Matcher walks the
// grammar as the model's tokens arrive, and Mask removes every token whose bytes cannot
// continue valid output, as llama.cpp's GBNF grammars do. The grammar allows no whitespace
// between JSON tokens beyond one optional space after ':' and ',' and in front of the value,
// and bounds the digits of numbers, so that even a tiny model reaches the end.
package constrain

import (
	"fmt"
	"strings"
	"sync"
)

// elem is one grammar element: a byte class (set) or a reference to a rule.
type elem struct {
	set  *[256]bool
	rule int32 // when set is nil
}

// Grammar is a set of rules, each a list of alternatives (sequences of elements); rule 0 is
// the root. Rules must not be left-recursive.
type Grammar struct {
	rules [][][]elem
	names []string

	mu       sync.Mutex // guards the interned states and their transitions
	interned map[string]*snode
}

// builder helps compile grammars.
type builder struct {
	g    *Grammar
	sets map[string]*[256]bool
}

func newBuilder() *builder {
	return &builder{g: &Grammar{}, sets: map[string]*[256]bool{}}
}

// rule reserves a rule and returns its index; define fills it in.
func (b *builder) rule(name string) int32 {
	b.g.rules = append(b.g.rules, nil)
	b.g.names = append(b.g.names, name)
	return int32(len(b.g.rules) - 1)
}

func (b *builder) define(r int32, alts ...[]elem) { b.g.rules[r] = alts }

// def reserves and defines a rule at once.
func (b *builder) def(name string, alts ...[]elem) elem {
	r := b.rule(name)
	b.define(r, alts...)
	return ref(r)
}

func ref(r int32) elem { return elem{rule: r} }

// class is a byte set given as ranges "a-z", single bytes, or "^..." for a complement.
func (b *builder) class(spec string) elem {
	if s, ok := b.sets[spec]; ok {
		return elem{set: s}
	}
	var s [256]bool
	body, neg := strings.CutPrefix(spec, "^")
	if spec == "^" {
		body, neg = "^", false
	}
	for i := 0; i < len(body); i++ {
		if i+2 < len(body) && body[i+1] == '-' {
			for c := int(body[i]); c <= int(body[i+2]); c++ {
				s[c] = true
			}
			i += 2
			continue
		}
		s[body[i]] = true
	}
	if neg {
		for c := range s {
			s[c] = !s[c]
		}
	}
	b.sets[spec] = &s
	return elem{set: &s}
}

// byteSet is a class of exactly the given bytes.
func (b *builder) byteSet(c byte) elem {
	key := fmt.Sprintf("=%d", c)
	if s, ok := b.sets[key]; ok {
		return elem{set: s}
	}
	var s [256]bool
	s[c] = true
	b.sets[key] = &s
	return elem{set: &s}
}

// lit is the sequence of a literal's bytes.
func (b *builder) lit(s string) []elem {
	out := make([]elem, len(s))
	for i := range len(s) {
		out[i] = b.byteSet(s[i])
	}
	return out
}

func seq(parts ...any) []elem {
	var out []elem
	for _, p := range parts {
		switch v := p.(type) {
		case elem:
			out = append(out, v)
		case []elem:
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("constrain: seq of %T", p))
		}
	}
	return out
}

// opt is x or nothing.
func (b *builder) opt(name string, x ...any) elem {
	return b.def(name, seq(x...), nil)
}

// repeat is x repeated min..max times (max < 0: unbounded), built from right-recursive rules.
func (b *builder) repeat(name string, x elem, min, max int) elem {
	var tail elem
	if max < 0 {
		r := b.rule(name + "*")
		b.define(r, []elem{x, ref(r)}, nil)
		tail = ref(r)
	} else {
		// opt_k = x opt_{k+1} | ε, for the max-min optional copies.
		var next *elem
		for k := max - min; k > 0; k-- {
			alts := [][]elem{{x}, nil}
			if next != nil {
				alts[0] = []elem{x, *next}
			}
			e := b.def(fmt.Sprintf("%s{%d}", name, k), alts...)
			next = &e
		}
		if next == nil {
			tail = b.def(name+"{}", nil)
		} else {
			tail = *next
		}
	}
	out := make([]elem, 0, min+1)
	for range min {
		out = append(out, x)
	}
	out = append(out, tail)
	return b.def(name, out)
}
