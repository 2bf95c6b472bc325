package sample

import (
	"math"
	"testing"
)

func freq(p Params, logits []float32, n int) []float64 {
	s := New(p)
	f := make([]float64, len(logits))
	for i := 0; i < n; i++ {
		f[s.Sample(logits, nil)]++
	}
	for i := range f {
		f[i] /= float64(n)
	}
	return f
}

func TestGreedy(t *testing.T) {
	l := []float32{1, 5, 5, -2}
	if got := New(Params{}).Sample(l, nil); got != 1 {
		t.Errorf("greedy picked %d, want 1 (the first of equal maxima)", got)
	}
	if got := New(Params{Temperature: 2, TopK: 1}).Sample([]float32{0, 3, 1}, nil); got != 1 {
		t.Errorf("top-k 1 picked %d", got)
	}
}

// With temperature 1 the draw follows softmax(logits).
func TestDistribution(t *testing.T) {
	l := []float32{0, float32(math.Log(3)), float32(math.Log(6))}
	f := freq(Params{Temperature: 1, Seed: 7}, l, 40000)
	for i, want := range []float64{0.1, 0.3, 0.6} {
		if math.Abs(f[i]-want) > 0.015 {
			t.Errorf("token %d drawn %.3f of the time, want %.3f", i, f[i], want)
		}
	}
	// Temperature 0.5 squares the odds: 1:9:36.
	f = freq(Params{Temperature: 0.5, Seed: 8}, l, 40000)
	if math.Abs(f[2]-36.0/46) > 0.015 || math.Abs(f[0]-1.0/46) > 0.01 {
		t.Errorf("temperature 0.5: %v", f)
	}
}

func TestTruncation(t *testing.T) {
	l := []float32{0, float32(math.Log(3)), float32(math.Log(6))} // p = .1 .3 .6
	if f := freq(Params{Temperature: 1, TopP: 0.85, Seed: 1}, l, 20000); f[0] != 0 || math.Abs(f[2]-2.0/3) > 0.02 {
		t.Errorf("top-p 0.85 kept the tail or misweighted: %v", f)
	}
	if f := freq(Params{Temperature: 1, TopK: 2, Seed: 2}, l, 20000); f[0] != 0 {
		t.Errorf("top-k 2: %v", f)
	}
	if f := freq(Params{Temperature: 1, MinP: 0.4, Seed: 3}, l, 20000); f[0] != 0 || f[1] == 0 {
		t.Errorf("min-p 0.4 (floor 0.24): %v", f)
	}
}

func TestRepeatPenalty(t *testing.T) {
	l := []float32{2, 1.5, -1}
	s := New(Params{RepeatPenalty: 2})
	if got := s.Sample(l, []int32{0}); got != 1 {
		t.Errorf("penalised token 0 (2 -> 1) still won: %d", got)
	}
	if l[0] != 2 {
		t.Error("Sample modified the caller's logits")
	}
	if got := New(Params{RepeatPenalty: 2, RepeatLastN: 1}).Sample(l, []int32{0, 2}); got != 0 {
		t.Errorf("penalty looked past the last token: %d", got)
	}
}

func TestSeedRepeats(t *testing.T) {
	l := make([]float32, 50)
	for i := range l {
		l[i] = float32(math.Sin(float64(i)))
	}
	p := Params{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}
	a, b, c := New(p), New(p), New(Params{Temperature: 0.9, Seed: 43})
	same := true
	for i := 0; i < 200; i++ {
		x, y := a.Sample(l, nil), b.Sample(l, nil)
		if x != y {
			t.Fatalf("same seed, draw %d: %d vs %d", i, x, y)
		}
		if c.Sample(l, nil) != x {
			same = false
		}
	}
	if same {
		t.Error("a different seed gave the same 200 draws")
	}
	if err := (Params{TopP: 2}).Validate(); err == nil {
		t.Error("top-p 2 accepted")
	}
}
