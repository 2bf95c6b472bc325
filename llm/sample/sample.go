// Package sample picks the next token from logits: greedy, or random after repetition
// penalty, top-k, top-p (nucleus), min-p and temperature, in llama.cpp's default order. The
// random stream comes from the seed alone, so ranks that share the logits and the seed draw the
// same token, and a run repeats exactly.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Params configures a Sampler. The zero value is greedy decoding.
type Params struct {
	Temperature   float32 // <= 0: greedy (argmax after the repetition penalty)
	TopK          int     // keep the k most likely tokens (<= 0: all)
	TopP          float32 // keep the smallest set whose probability reaches p (>= 1 or <= 0: all)
	MinP          float32 // drop tokens less likely than MinP x the most likely (<= 0: none)
	RepeatPenalty float32 // divide positive logits (multiply negative ones) of recent tokens; 1 or 0: off
	RepeatLastN   int     // how many recent tokens the penalty looks at (0: 64)
	Seed          uint64
}

// Validate reports nonsensical settings.
func (p Params) Validate() error {
	switch {
	case math.IsNaN(float64(p.Temperature)) || p.Temperature > 100:
		return fmt.Errorf("sample: temperature %g", p.Temperature)
	case p.TopP < 0 || p.TopP > 1:
		return fmt.Errorf("sample: top-p %g is outside [0, 1]", p.TopP)
	case p.MinP < 0 || p.MinP > 1:
		return fmt.Errorf("sample: min-p %g is outside [0, 1]", p.MinP)
	case p.RepeatPenalty < 0:
		return fmt.Errorf("sample: repetition penalty %g", p.RepeatPenalty)
	}
	return nil
}

// Sampler draws tokens; it is not safe for concurrent use.
type Sampler struct {
	p     Params
	rng   *rand.Rand
	cand  []cand
	work  []float32
	penal map[int32]bool
}

type cand struct {
	id    int32
	logit float32
	p     float64
}

// New returns a Sampler with its own random stream seeded by p.Seed.
func New(p Params) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x73616d706c65)), penal: map[int32]bool{}}
}

// Sample returns the next token for logits given the tokens so far (for the penalty). logits
// is not modified.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	l := logits
	if s.p.RepeatPenalty > 0 && s.p.RepeatPenalty != 1 && len(history) > 0 {
		s.work = append(s.work[:0], logits...)
		l = s.work
		n := s.p.RepeatLastN
		if n <= 0 {
			n = 64
		}
		clear(s.penal)
		for _, id := range history[max(0, len(history)-n):] {
			if id < 0 || int(id) >= len(l) || s.penal[id] {
				continue
			}
			s.penal[id] = true
			if l[id] > 0 {
				l[id] /= s.p.RepeatPenalty
			} else {
				l[id] *= s.p.RepeatPenalty
			}
		}
	}
	if s.p.Temperature <= 0 {
		return Argmax(l)
	}
	c := s.cand[:0]
	for i, v := range l {
		if !math.IsNaN(float64(v)) {
			c = append(c, cand{id: int32(i), logit: v})
		}
	}
	s.cand = c
	if len(c) == 0 {
		return 0
	}
	// Descending logit, ascending id among equals: a total order, so the result never depends
	// on the sort algorithm.
	sort.Slice(c, func(a, b int) bool {
		if c[a].logit != c[b].logit {
			return c[a].logit > c[b].logit
		}
		return c[a].id < c[b].id
	})
	if k := s.p.TopK; k > 0 && k < len(c) {
		c = c[:k]
	}
	softmax(c, 1)
	if tp := s.p.TopP; tp > 0 && tp < 1 {
		var cum float64
		for i := range c {
			cum += c[i].p
			if cum >= float64(tp) {
				c = c[:i+1]
				break
			}
		}
	}
	if mp := s.p.MinP; mp > 0 {
		floor := c[0].p * float64(mp)
		n := 1
		for n < len(c) && c[n].p >= floor {
			n++
		}
		c = c[:n]
	}
	softmax(c, s.p.Temperature)
	u := s.rng.Float64()
	var cum float64
	for i := range c {
		cum += c[i].p
		if u < cum {
			return c[i].id
		}
	}
	return c[len(c)-1].id
}

// softmax sets p of the (descending) candidates from logit/temp.
func softmax(c []cand, temp float32) {
	mx := float64(c[0].logit) / float64(temp)
	var sum float64
	for i := range c {
		c[i].p = math.Exp(float64(c[i].logit)/float64(temp) - mx)
		sum += c[i].p
	}
	for i := range c {
		c[i].p /= sum
	}
}

// Argmax returns the index of the largest logit (the lowest among equals).
func Argmax(logits []float32) int32 {
	best, bi := float32(math.Inf(-1)), 0
	for i, v := range logits {
		if v > best {
			best, bi = v, i
		}
	}
	return int32(bi)
}
