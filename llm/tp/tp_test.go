package tp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/sample"
)

func rankData(rank, n int) []float32 {
	r := rand.New(rand.NewPCG(uint64(rank), uint64(n)))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func TestAllreduce(t *testing.T) {
	for p := 1; p <= 5; p++ {
		// the largest runs a bandwidth-optimal algorithm (Rabenseifner or the ring)
		for _, n := range []int{1, 7, 1000, 1<<16*p + 3} {
			res := make([][]float32, p)
			err := comm.Run(p, func(c *comm.Comm) error {
				g := New(c)
				x := rankData(c.Rank(), n)
				if err := g.AllreduceSum(x); err != nil {
					return err
				}
				res[c.Rank()] = x
				return nil
			})
			if err != nil {
				t.Fatalf("p=%d n=%d: %v", p, n, err)
			}
			want := make([]float64, n)
			for r := 0; r < p; r++ {
				for i, v := range rankData(r, n) {
					want[i] += float64(v)
				}
			}
			for r := 0; r < p; r++ {
				for i := range want {
					if math.Abs(float64(res[r][i])-want[i]) > 1e-5 {
						t.Fatalf("p=%d n=%d rank %d [%d] = %v, want %v", p, n, r, i, res[r][i], want[i])
					}
					if math.Float32bits(res[r][i]) != math.Float32bits(res[0][i]) {
						t.Fatalf("p=%d n=%d: ranks 0 and %d differ at %d", p, n, r, i)
					}
				}
			}
		}
	}
}

func TestAllgatherv(t *testing.T) {
	for p := 1; p <= 5; p++ {
		counts := make([]int, p)
		total := 0
		for r := range counts {
			counts[r] = (r * 3) % 4 // includes zeros
			total += counts[r]
		}
		err := comm.Run(p, func(c *comm.Comm) error {
			g := New(c)
			send := make([]float32, counts[c.Rank()])
			for i := range send {
				send[i] = float32(100*c.Rank() + i)
			}
			recv := make([]float32, total)
			if err := g.Allgatherv(send, recv, counts); err != nil {
				return err
			}
			k := 0
			for r := 0; r < p; r++ {
				for i := 0; i < counts[r]; i++ {
					if recv[k] != float32(100*r+i) {
						return fmt.Errorf("rank %d: recv[%d] = %v, want %v", c.Rank(), k, recv[k], 100*r+i)
					}
					k++
				}
			}
			if err := g.Allgatherv(send, recv, counts[:p-1]); err == nil && p > 1 {
				return fmt.Errorf("wrong counts accepted")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
	}
}

type result struct {
	tokens []int32
	logits []float32 // first step
}

// generate runs greedy decoding at tensor-parallel degree p with in-process ranks and returns
// rank 0's result after checking that every rank produced the same tokens.
func generate(t *testing.T, path string, p int, prompt []int32, n int) result {
	t.Helper()
	res := make([]result, p)
	err := comm.Run(p, func(c *comm.Comm) error {
		f, err := gguf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		m, err := model.Load(f, model.Options{Group: New(c), Context: 128})
		if err != nil {
			return err
		}
		if err := m.Forward(prompt); err != nil {
			return err
		}
		var r result
		if r.logits, err = m.Logits(); err != nil {
			return err
		}
		for len(r.tokens) < n {
			id, err := m.Argmax()
			if err != nil {
				return err
			}
			r.tokens = append(r.tokens, id)
			if err := m.Forward([]int32{id}); err != nil {
				return err
			}
		}
		res[c.Rank()] = r
		return nil
	})
	if err != nil {
		t.Fatalf("TP=%d: %v", p, err)
	}
	for r := 1; r < p; r++ {
		for i := range res[0].tokens {
			if res[r].tokens[i] != res[0].tokens[i] {
				t.Fatalf("TP=%d: rank %d token %d = %d, rank 0 has %d", p, r, i, res[r].tokens[i], res[0].tokens[i])
			}
		}
	}
	return res[0]
}

func compare(t *testing.T, name string, p int, ref, got result, tol float64) {
	t.Helper()
	for i := range ref.tokens {
		if got.tokens[i] != ref.tokens[i] {
			t.Fatalf("%s TP=%d: token %d = %d, TP=1 has %d\n got %v\n ref %v", name, p, i, got.tokens[i], ref.tokens[i], got.tokens, ref.tokens)
		}
	}
	var d, mag float64
	for i := range ref.logits {
		d = max(d, math.Abs(float64(got.logits[i]-ref.logits[i])))
		mag = max(mag, math.Abs(float64(ref.logits[i])))
	}
	if d > tol*max(mag, 1) {
		t.Errorf("%s TP=%d: logits differ from TP=1 by %g (max |logit| %g)", name, p, d, mag)
	}
	t.Logf("%s TP=%d: %d tokens identical, logits within %.2g of TP=1", name, p, len(ref.tokens), d)
}

// The real model at TP = 1, 2, 4 (heads 8, KV heads 4): same greedy tokens, close logits.
func TestStoriesTP(t *testing.T) {
	prompt := []int32{1, 403, 407, 261, 378}
	for _, file := range []string{"stories260K.gguf", "stories260K-f16.gguf", "stories260K-ff192-q8_0.gguf", "stories260K-ff192-q4_0.gguf"} {
		path := testfiles.Path(t, "llm", file)
		ref := generate(t, path, 1, prompt, 32)
		for _, p := range []int{2, 4} {
			compare(t, file, p, ref, generate(t, path, p, prompt, 32), 1e-3)
		}
	}
}

// Synthetic GQA models of every tensor type and architecture variant at TP = 1, 2, 4,
// including a degree larger than the KV-head count (KV heads replicated).
func TestSyntheticTP(t *testing.T) {
	dir := t.TempDir()
	base := model.Shape{Arch: "llama", Dim: 256, Layers: 2, Heads: 8, KVHeads: 4, FFN: 512, Vocab: 384, Context: 128}
	type tc struct {
		name  string
		shape model.Shape
		typ   gguf.Type
	}
	var cases []tc
	for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		cases = append(cases, tc{"llama-" + typ.String(), base, typ})
	}
	q2, q3, kv2 := base, base, base
	q2.Arch, q3.Arch, kv2.KVHeads = "qwen2", "qwen3", 2
	q3.HeadDim = 64 // qwen3 decouples the head size from dim/heads
	cases = append(cases, tc{"qwen2-Q8_0", q2, gguf.Q8_0}, tc{"qwen3-Q4_0", q3, gguf.Q4_0}, tc{"kv2-Q8_0", kv2, gguf.Q8_0})
	prompt := []int32{1, 300, 17, 42, 99}
	for i, c := range cases {
		path := filepath.Join(dir, c.name+".gguf")
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := model.WriteSynthetic(fh, c.shape, c.typ, uint64(i+1), nil); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		ref := generate(t, path, 1, prompt, 16)
		distinct := map[int32]bool{}
		for _, id := range ref.tokens {
			distinct[id] = true
		}
		if len(distinct) < 2 {
			t.Errorf("%s: degenerate output %v", c.name, ref.tokens)
		}
		// Partial sums added in another order change logits by float rounding only, but
		// the activations are then rounded to the weights' vector type (F16, BF16, Q8_0)
		// as llama.cpp does (and queries and attention weights to F16 for the F16 KV cache), and a
		// rounding that flips moves the logits by more.
		tol := map[gguf.Type]float64{gguf.F32: 1e-4, gguf.F16: 2e-3, gguf.BF16: 1e-2}[c.typ]
		if tol == 0 {
			tol = 1e-2
		}
		for _, p := range []int{2, 4} {
			compare(t, c.name, p, ref, generate(t, path, p, prompt, 16), tol)
		}
	}
}

// A degree that does not divide the heads fails on every rank before loading, naming the
// degrees that work.
func TestBadDegree(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	err := comm.Run(3, func(c *comm.Comm) error {
		f, err := gguf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = model.Load(f, model.Options{Group: New(c)})
		if err == nil {
			return fmt.Errorf("rank %d: TP=3 accepted for 8 heads", c.Rank())
		}
		t.Logf("rank %d: %v", c.Rank(), err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Sampling with a seed gives the same tokens at every degree (every rank gathers the same
// logits and draws from the same stream).
func TestSampledTP(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	params := sample.Params{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.02, RepeatPenalty: 1.1, Seed: 1234}
	var ref []int32
	for _, p := range []int{1, 2, 4} {
		out := make([][]int32, p)
		err := comm.Run(p, func(c *comm.Comm) error {
			f, err := gguf.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			m, err := model.Load(f, model.Options{Group: New(c), Context: 128})
			if err != nil {
				return err
			}
			return m.Generate([]int32{1, 403, 407, 261, 378}, 48, params, func(id int32) (bool, error) {
				out[c.Rank()] = append(out[c.Rank()], id)
				return true, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		for r := range out {
			if fmt.Sprint(out[r]) != fmt.Sprint(out[0]) {
				t.Fatalf("TP=%d: rank %d sampled %v, rank 0 %v", p, r, out[r], out[0])
			}
		}
		if ref == nil {
			ref = out[0]
		} else if fmt.Sprint(out[0]) != fmt.Sprint(ref) {
			t.Fatalf("TP=%d sampled %v, TP=1 %v", p, out[0], ref)
		}
	}
	if len(ref) != 48 {
		t.Fatalf("%d tokens", len(ref))
	}
}
