package constrain

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAllowed masks a 32,000-token vocabulary of random word-like pieces inside a JSON
// string and between members of a schema's object.
func BenchmarkAllowed(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(` abcdefghijklmnopqrstuvwxyz"{}[]:,0123456789.-_ABCDEFGHIJ`)
	pieces := make([]string, 32000)
	for i := range pieces {
		n := 1 + rng.IntN(8)
		p := make([]byte, n)
		for k := range p {
			p[k] = alphabet[rng.IntN(len(alphabet))]
		}
		pieces[i] = string(p)
	}
	v := NewVocab(pieces, nil)
	g, err := CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","n","tags"]}`))
	if err != nil {
		b.Fatal(err)
	}
	allowed := make([]bool, len(pieces))
	for _, prefix := range []string{`{"name":"ab`, `{"name":"x","n":12`} {
		m := g.NewMatcher()
		if !m.Accept([]byte(prefix)) {
			b.Fatal(prefix)
		}
		b.Run(prefix, func(b *testing.B) {
			for b.Loop() {
				m.Allowed(v, allowed)
			}
		})
	}
}
