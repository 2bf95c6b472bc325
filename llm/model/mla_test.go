package model

import (
	"bytes"
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
		if got := m.KVBytesPerToken(); got != want {
			t.Errorf("%s: %d KV bytes per token, want %d", kv, got, want)
		}
		c, err := m.NewCache(3, 32)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		for _, h := range append(c.k16, c.v16...) {
			n += 2 * len(h)
		}
		for _, f := range append(c.k32, c.v32...) {
			n += 4 * len(f)
		}
		if n != 3*32*want {
			t.Errorf("%s: cache of 3 slots x 32 tokens holds %d bytes, want %d", kv, n, 3*32*want)
		}
	}
}
