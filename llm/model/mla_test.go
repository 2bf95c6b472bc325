package model

import (
	"bytes"
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
