package constrain

import (
	"slices"
)

// frame is a position in a rule: the next element of alternative alt.
type frame struct {
	rule, alt, idx int32
}

// maxDepth bounds a stack: deeper nesting is refused rather than grown without end.
const maxDepth = 512

// maxStacks bounds the parses kept at once (an ambiguous grammar could otherwise multiply
// them).
const maxStacks = 4096

// state is the set of parses after some bytes: stacks whose top frame is at a byte class,
// and whether some parse is complete.
type state struct {
	stacks [][]frame
	accept bool
}

// Matcher tracks the bytes generated so far against a grammar.
type Matcher struct {
	g  *Grammar
	st state
}

// NewMatcher starts at the grammar's root.
func (g *Grammar) NewMatcher() *Matcher {
	m := &Matcher{g: g}
	m.st = g.expand([][]frame{nil}, true)
	return m
}

// expand resolves stacks (each positioned anywhere) into stacks whose top element is a byte
// class, noting completion; root pushes rule 0 onto the first (empty) stack.
func (g *Grammar) expand(in [][]frame, root bool) state {
	var st state
	seen := map[string]bool{}
	var walk func(s []frame)
	walk = func(s []frame) {
		if len(st.stacks) >= maxStacks || len(s) > maxDepth {
			return
		}
		if len(s) == 0 {
			st.accept = true
			return
		}
		top := s[len(s)-1]
		alt := g.rules[top.rule][top.alt]
		if int(top.idx) == len(alt) {
			walk(s[:len(s)-1])
			return
		}
		e := alt[top.idx]
		if e.set != nil {
			k := key(s)
			if !seen[k] {
				seen[k] = true
				st.stacks = append(st.stacks, s)
			}
			return
		}
		// A reference: the caller continues after it (dropped when it was last), the rule's
		// alternatives are pushed.
		base := slices.Clip(s[:len(s)-1])
		if int(top.idx)+1 < len(alt) {
			base = append(base, frame{top.rule, top.alt, top.idx + 1})
			base = slices.Clip(base)
		}
		for a := range g.rules[e.rule] {
			walk(append(base, frame{e.rule, int32(a), 0}))
		}
	}
	for _, s := range in {
		if root && len(s) == 0 {
			for a := range g.rules[0] {
				walk([]frame{{0, int32(a), 0}})
			}
			continue
		}
		walk(s)
	}
	return st
}

func key(s []frame) string {
	b := make([]byte, 0, len(s)*12)
	for _, f := range s {
		b = append(b, byte(f.rule), byte(f.rule>>8), byte(f.rule>>16), byte(f.alt), byte(f.alt>>8), byte(f.idx), byte(f.idx>>8), byte(f.idx>>16))
	}
	return string(b)
}

// step is the state after byte c (no stacks when c cannot follow).
func (g *Grammar) step(st state, c byte) state {
	var next [][]frame
	for _, s := range st.stacks {
		top := s[len(s)-1]
		if !g.rules[top.rule][top.alt][top.idx].set[c] {
			continue
		}
		n := slices.Clone(s)
		n[len(n)-1].idx++
		next = append(next, n)
	}
	if len(next) == 0 {
		return state{}
	}
	return g.expand(next, false)
}

// Accept feeds bytes; false (with the matcher unchanged) when they cannot continue the output.
func (m *Matcher) Accept(b []byte) bool {
	st := m.st
	for _, c := range b {
		if len(st.stacks) == 0 {
			return false
		}
		st = m.g.step(st, c)
		if len(st.stacks) == 0 && !st.accept {
			return false
		}
	}
	m.st = st
	return true
}

// Done reports whether the output so far is complete (the end may come now).
func (m *Matcher) Done() bool { return m.st.accept }

// Final reports whether the output is complete and nothing may follow.
func (m *Matcher) Final() bool { return m.st.accept && len(m.st.stacks) == 0 }

// Clone returns an independent copy (stacks are never modified in place).
func (m *Matcher) Clone() *Matcher {
	c := *m
	return &c
}
