package constrain

import (
	"encoding/binary"
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
const maxStacks = 256

// state is the set of parses after some bytes: stacks whose top frame is at a byte class,
// and whether some parse is complete.
type state struct {
	stacks [][]frame
	accept bool
}

// snode is an interned parse state with its transitions, filled in as they are needed: the
// same states recur (every ordinary byte inside a string leads back to the same one), so a
// mask mostly follows cached transitions.
type snode struct {
	st   state
	next map[byte]*snode // nil value: the byte cannot follow
}

// maxInterned bounds the interning table; past it the table starts afresh (nodes already
// reached stay valid).
const maxInterned = 1 << 16

// Matcher tracks the bytes generated so far against a grammar.
type Matcher struct {
	g  *Grammar
	at *snode
}

// NewMatcher starts at the grammar's root.
func (g *Grammar) NewMatcher() *Matcher {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Matcher{g: g, at: g.intern(g.expand([][]frame{nil}, true))}
}

func (g *Grammar) intern(st state) *snode {
	if len(st.stacks) == 0 && !st.accept {
		return nil
	}
	b := make([]byte, 0, 64)
	if st.accept {
		b = append(b, 1)
	}
	for _, s := range st.stacks {
		b = append(b, 0xff)
		for _, f := range s {
			b = binary.AppendUvarint(b, uint64(f.rule))
			b = binary.AppendUvarint(b, uint64(f.alt))
			b = binary.AppendUvarint(b, uint64(f.idx))
		}
	}
	k := string(b)
	if n, ok := g.interned[k]; ok {
		return n
	}
	if g.interned == nil || len(g.interned) >= maxInterned {
		g.interned = map[string]*snode{}
	}
	n := &snode{st: st, next: map[byte]*snode{}}
	g.interned[k] = n
	return n
}

// step is the node after byte c (nil when c cannot follow); g.mu is held.
func (g *Grammar) step(n *snode, c byte) *snode {
	if nx, ok := n.next[c]; ok {
		return nx
	}
	nx := g.intern(g.stepState(n.st, c))
	n.next[c] = nx
	return nx
}

// expand resolves stacks (each positioned anywhere) into stacks whose top element is a byte
// class, noting completion; root pushes rule 0 onto the first (empty) stack.
func (g *Grammar) expand(in [][]frame, root bool) state {
	var st state
	// depth counts the expansions along one path: a rule that reaches itself without taking a
	// byte (left recursion, such as a schema that is only "$ref": "#") ends there.
	var walk func(s []frame, depth int)
	walk = func(s []frame, depth int) {
		if len(st.stacks) >= maxStacks || len(s) > maxDepth || depth > 4*maxDepth {
			return
		}
		if len(s) == 0 {
			st.accept = true
			return
		}
		top := s[len(s)-1]
		alt := g.rules[top.rule][top.alt]
		if int(top.idx) == len(alt) {
			walk(s[:len(s)-1], depth+1)
			return
		}
		e := alt[top.idx]
		if e.set != nil {
			// Parses are few: a linear look for an equal one is cheaper than hashing.
			for _, t := range st.stacks {
				if slices.Equal(t, s) {
					return
				}
			}
			st.stacks = append(st.stacks, s)
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
			walk(append(base, frame{e.rule, int32(a), 0}), depth+1)
		}
	}
	for _, s := range in {
		if root && len(s) == 0 {
			for a := range g.rules[0] {
				walk([]frame{{0, int32(a), 0}}, 0)
			}
			continue
		}
		walk(s, 0)
	}
	return st
}

// step is the state after byte c (no stacks when c cannot follow).
func (g *Grammar) stepState(st state, c byte) state {
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
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	at := m.at
	for _, c := range b {
		if at = m.g.step(at, c); at == nil {
			return false
		}
	}
	m.at = at
	return true
}

// Done reports whether the output so far is complete (the end may come now).
func (m *Matcher) Done() bool { return m.at.st.accept }

// Final reports whether the output is complete and nothing may follow.
func (m *Matcher) Final() bool { return m.at.st.accept && len(m.at.st.stacks) == 0 }

// Clone returns an independent copy.
func (m *Matcher) Clone() *Matcher {
	c := *m
	return &c
}
