package model

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Latent attention caches the latent, not keys and values: per token and layer
// KVLoraRank + RopeDim values (F16: 2 bytes each) on every rank, whatever the TP degree, where
// llama.cpp c392e50 caches Heads*(HeadDim+VHeadDim).
func TestMLACacheIsCompressed(t *testing.T) {
	s := Shapes["deepseek2-tiny"]
	var b bytes.Buffer
	if err := WriteSynthetic(&b, s, gguf.F32, 1, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"q8_0", "q4_0"} {
		if _, err := Load(f, Options{Context: 32, KVType: kv}); err == nil || !strings.Contains(err.Error(), "latent cache is f16 or f32") {
			t.Errorf("KV type %s on a latent cache: %v, want a refusal", kv, err)
		}
	}
	for _, kv := range []string{"f16", "f32"} {
		m, err := Load(f, Options{Context: 32, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		el := 2
		if kv == "f32" {
			el = 4
		}
		want := s.Layers * (s.KVLoraRank + s.RopeDim) * el
		if got := m.KVBytesPerToken(); got != int64(want) {
			t.Errorf("%s: %d KV bytes per token, want %d", kv, got, want)
		}
		c, err := m.NewCache(3, 32)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, b := range append(c.k, c.v...) {
			n += b.bytes()
		}
		if n != int64(3*32*want) {
			t.Errorf("%s: cache of 3 slots x 32 tokens holds %d bytes, want %d", kv, n, 3*32*want)
		}
	}
}

// Uneven expert placement: shares that do not fit the group are refused with a message.
func TestExpertSharesChecked(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSynthetic(&b, Shapes["mixtral-tiny"], gguf.F32, 1, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shares []int
		want   string
	}{{[]int{1, 1}, "want one per rank (1)"}, {[]int{0}, "all zero"}, {[]int{-1}, "out of [0, 2^20]"}} {
		if _, err := Load(f, Options{Context: 16, ExpertShares: c.shares}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shares %v: error %v, want %q", c.shares, err, c.want)
		}
	}
	m, err := Load(f, Options{Context: 16, ExpertShares: []int{5}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Shard.E0 != 0 || m.Shard.E1 != 8 {
		t.Errorf("one rank with shares [5]: experts [%d,%d)", m.Shard.E0, m.Shard.E1)
	}
	for r, want := range [][2]int{{0, 6}, {6, 8}} {
		e0, e1, err := expertRange(8, r, 2, []int{3, 1})
		if err != nil || e0 != want[0] || e1 != want[1] {
			t.Errorf("shares 3:1, rank %d: [%d,%d) %v, want %v", r, e0, e1, err, want)
		}
	}
}

// Latent attention over a batch (the slot's latents converted once, every head's tokens in
// chunks of matrix products, the causal bound per token) gives the logits of the same tokens
// run one at a time: a 45-token prefill (two chunks), then 30 more tokens in one batch on
// top of them, against 75 single-token steps, F32 weights, F32 and F16 caches, at TP 1.
// Batches of 16 and more tokens up-project the keys from the latents instead of absorbing the
// queries, so this also checks the two formulations against each other.
func TestMLAPrefillMatchesSteps(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSynthetic(&b, Shapes["deepseek2-tiny"], gguf.F32, 1, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"f32", "f16"} {
		m, err := Load(f, Options{Context: 96, KVType: kv})
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-4 // ~3e-6 measured
		if kv == "f16" {
			// the weights are rounded to F16 for their product with the F16 latents: the
			// ~1e-6 by which the two orders of products move a score can move a weight by
			// an F16 step (~1.3e-4 measured)
			tol = 1e-3
		}
		mlaPrefillVsSteps(t, m, kv, tol)
	}
}

func mlaPrefillVsSteps(t *testing.T, m *Model, kv string, tol float64) {
	toks := make([]int32, 75)
	for i := range toks {
		toks[i] = int32((i*97 + 13) % m.Cfg.Vocab)
	}
	var steps [][]float32
	for _, id := range toks {
		if err := m.Forward([]int32{id}); err != nil {
			t.Fatal(err)
		}
		l, err := m.Logits()
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, slices.Clone(l))
	}
	m.Reset()
	var d float64
	for _, part := range [][2]int{{0, 45}, {45, 75}} {
		if err := m.Forward(toks[part[0]:part[1]]); err != nil {
			t.Fatal(err)
		}
		l, err := m.Logits()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range l {
			d = max(d, math.Abs(float64(v-steps[part[1]-1][i])))
		}
	}
	t.Logf("%s cache: batched vs single-token logits: max |diff| %.2g", kv, d)
	if d > tol {
		t.Errorf("%s cache: batched latent attention differs from single-token steps by up to %g", kv, d)
	}
}
