package model_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/tp"
)

var batchPrompts = [][]int32{{1, 403, 407, 261, 378}, {1, 300, 17}, {1, 42, 99, 7, 8, 9, 10, 11, 12}, {1, 5}}

// single decodes prompt greedily through the one-sequence API (Forward + Argmax).
func single(t *testing.T, m *model.Model, prompt []int32, n int) ([]int32, []float32) {
	t.Helper()
	m.Reset()
	if err := m.Forward(prompt); err != nil {
		t.Fatal(err)
	}
	first, err := m.Logits()
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for len(out) < n {
		id, err := m.Argmax()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
		if err := m.Forward([]int32{id}); err != nil {
			t.Fatal(err)
		}
	}
	return out, first
}

// staggered decodes every prompt greedily, sequence i joining at step i (its whole prompt in
// the same batch as the decode tokens of the sequences before it), in slots taken from the
// end of the cache so that slot numbers differ from sequence numbers. It returns the tokens
// and each sequence's first logits.
func staggered(m *model.Model, c *model.Cache, prompts [][]int32, n int) ([][]int32, [][]float32, error) {
	out := make([][]int32, len(prompts))
	first := make([][]float32, len(prompts))
	pos := make([]int, len(prompts))
	for step := 0; ; step++ {
		var seqs []model.Seq
		var who []int
		for i, p := range prompts {
			switch {
			case i == step:
				seqs = append(seqs, model.Seq{Slot: c.Slots() - 1 - i, Pos: 0, Tokens: p, Logits: true})
			case i < step && len(out[i]) < n:
				seqs = append(seqs, model.Seq{Slot: c.Slots() - 1 - i, Pos: pos[i], Tokens: out[i][len(out[i])-1:], Logits: true})
			default:
				continue
			}
			who = append(who, i)
		}
		if len(seqs) == 0 {
			return out, first, nil
		}
		if err := m.ForwardBatch(c, seqs); err != nil {
			return nil, nil, err
		}
		ids, err := m.BatchArgmax(c)
		if err != nil {
			return nil, nil, err
		}
		var newRows []int
		for r, i := range who {
			if i == step {
				newRows = append(newRows, r)
			}
		}
		logits, err := m.BatchLogits(c, newRows)
		if err != nil {
			return nil, nil, err
		}
		for k, r := range newRows {
			first[who[r]] = logits[k]
		}
		for r, i := range who {
			pos[i] += len(seqs[r].Tokens)
			out[i] = append(out[i], ids[r])
		}
	}
}

func loadModel(t *testing.T, path string, g model.Group, kv string) (*model.Model, func()) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f, model.Options{Group: g, Context: 64, KVType: kv})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return m, func() { f.Close() }
}

// Sequences batched together, joining at different steps, decode exactly the tokens that
// each decodes alone, with first-step logits within rounding of the one-sequence path, at
// TP = 1 and 2, for a float and a quantized file and both KV cache types.
func TestForwardBatchMatchesForward(t *testing.T) {
	const n = 12
	for _, file := range []string{"stories260K.gguf", "stories260K-ff192-q4_0.gguf"} {
		path := testfiles.Path(t, "llm", file)
		for _, kv := range []string{"f16", "f32"} {
			m, done := loadModel(t, path, nil, kv)
			var want [][]int32
			var wantLogits [][]float32
			for _, p := range batchPrompts {
				ids, l := single(t, m, p, n)
				want, wantLogits = append(want, ids), append(wantLogits, l)
			}
			c, err := m.NewCache(6, 64)
			if err != nil {
				t.Fatal(err)
			}
			got, gotLogits, err := staggered(m, c, batchPrompts, n)
			done()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%s kv %s: sequence %d: batched %v, alone %v", file, kv, i, got[i], want[i])
				}
				var d float64
				for j := range wantLogits[i] {
					d = max(d, math.Abs(float64(gotLogits[i][j]-wantLogits[i][j])))
				}
				if d > 1e-2 {
					t.Errorf("%s kv %s: sequence %d: first logits differ by %g", file, kv, i, d)
				}
			}
			for _, p := range []int{2, 4} {
				res := make([][][]int32, p)
				err := comm.Run(p, func(cm *comm.Comm) error {
					m, done := loadModel(t, path, tp.New(cm), kv)
					defer done()
					c, err := m.NewCache(6, 64)
					if err != nil {
						return err
					}
					res[cm.Rank()], _, err = staggered(m, c, batchPrompts, n)
					return err
				})
				if err != nil {
					t.Fatalf("%s TP=%d: %v", file, p, err)
				}
				for r := range res {
					for i := range want {
						if !slices.Equal(res[r][i], want[i]) {
							t.Errorf("%s kv %s TP=%d rank %d: sequence %d: %v, want %v", file, kv, p, r, i, res[r][i], want[i])
						}
					}
				}
			}
		}
	}
}

// A synthetic GQA model with QKV bias (qwen2) and one with QK norms (qwen3): batched decoding
// matches the one-sequence path.
func TestForwardBatchSynthetic(t *testing.T) {
	dir := t.TempDir()
	for i, arch := range []string{"qwen2", "qwen3"} {
		shape := model.Shape{Arch: arch, Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512, Context: 64}
		path := filepath.Join(dir, arch+".gguf")
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := model.WriteSynthetic(fh, shape, gguf.Q8_0, uint64(i+7), nil); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		m, done := loadModel(t, path, nil, "f16")
		c, err := m.NewCache(4, 32)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := staggered(m, c, batchPrompts, 8)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range batchPrompts {
			if want, _ := single(t, m, p, 8); !slices.Equal(got[i], want) {
				t.Errorf("%s: sequence %d: batched %v, alone %v", arch, i, got[i], want)
			}
		}
		done()
	}
}

func TestForwardBatchBadInput(t *testing.T) {
	m, done := loadModel(t, testfiles.Path(t, "llm", "stories260K.gguf"), nil, "f16")
	defer done()
	if _, err := m.NewCache(2, 65); err == nil {
		t.Error("a cache longer than the model's context was accepted")
	}
	c, err := m.NewCache(2, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seqs []model.Seq
		want string
	}{
		{nil, "no tokens"},
		{[]model.Seq{{Slot: 2, Tokens: []int32{1}}}, "slot 2 outside"},
		{[]model.Seq{{Slot: -1, Tokens: []int32{1}}}, "slot -1 outside"},
		{[]model.Seq{{Slot: 0}}, "has no tokens"},
		{[]model.Seq{{Slot: 1, Pos: 15, Tokens: []int32{1, 2}}}, "overflow the slot's context of 16"},
		{[]model.Seq{{Slot: 0, Tokens: []int32{1, 1 << 20}}}, "outside the vocabulary"},
	} {
		err := m.ForwardBatch(c, tc.seqs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.seqs, err, tc.want)
		}
	}
	if err := m.ForwardBatch(c, []model.Seq{{Slot: 0, Tokens: []int32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.BatchLogits(c, []int{1}); err == nil {
		t.Error("BatchLogits of a row that is not there")
	}
}
