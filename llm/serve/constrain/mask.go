package constrain

import (
	"math"
	"sort"
)

// Vocab is a vocabulary's token bytes arranged in a trie, built once per model, so that a mask
// walks each shared prefix once.
type Vocab struct {
	nodes []node
	eog   []int32
	n     int
}

type node struct {
	bytes  []byte  // edge labels, ascending
	child  []int32 // node of each edge
	tokens []int32 // tokens whose bytes end here
}

// NewVocab takes every token's bytes (pieces[id]; "" for control tokens, which are never
// allowed) and the end-of-generation tokens (allowed once the output is complete).
func NewVocab(pieces []string, eog []int32) *Vocab {
	v := &Vocab{nodes: []node{{}}, eog: eog, n: len(pieces)}
	ids := make([]int, len(pieces))
	for i := range ids {
		ids[i] = i
	}
	sort.Slice(ids, func(a, b int) bool { return pieces[ids[a]] < pieces[ids[b]] })
	for _, id := range ids {
		p := pieces[id]
		if p == "" {
			continue
		}
		at := int32(0)
		for i := range len(p) {
			n := &v.nodes[at]
			k := sort.Search(len(n.bytes), func(j int) bool { return n.bytes[j] >= p[i] })
			if k < len(n.bytes) && n.bytes[k] == p[i] {
				at = n.child[k]
				continue
			}
			v.nodes = append(v.nodes, node{})
			n = &v.nodes[at]
			n.bytes = append(n.bytes[:k], append([]byte{p[i]}, n.bytes[k:]...)...)
			n.child = append(n.child[:k], append([]int32{int32(len(v.nodes) - 1)}, n.child[k:]...)...)
			at = int32(len(v.nodes) - 1)
		}
		v.nodes[at].tokens = append(v.nodes[at].tokens, int32(id))
	}
	return v
}

// Allowed sets allowed[id] for every token that can come next (allowed has one entry per
// token) and returns how many can.
func (m *Matcher) Allowed(v *Vocab, allowed []bool) int {
	clear(allowed)
	count := 0
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	var walk func(at int32, sn *snode)
	walk = func(at int32, sn *snode) {
		n := &v.nodes[at]
		for k, c := range n.bytes {
			next := g.step(sn, c)
			if next == nil {
				continue
			}
			ch := n.child[k]
			for _, id := range v.nodes[ch].tokens {
				allowed[id] = true
				count++
			}
			if len(next.st.stacks) > 0 {
				walk(ch, next)
			}
		}
	}
	if len(m.at.st.stacks) > 0 {
		walk(0, m.at)
	}
	if m.at.st.accept {
		for _, id := range v.eog {
			if !allowed[id] {
				allowed[id] = true
				count++
			}
		}
	}
	return count
}

// Apply sets the logits of the tokens that are not allowed to -Inf.
func Apply(logits []float32, allowed []bool) {
	inf := float32(math.Inf(-1))
	for i := range logits {
		if i >= len(allowed) || !allowed[i] {
			logits[i] = inf
		}
	}
}
