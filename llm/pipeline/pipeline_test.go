package pipeline

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/model/modeltest"
	"github.com/gorun-hpc/gorun/llm/sample"
)

func synthetic(t *testing.T, shape string, layers int) string {
	return modeltest.Synthetic(t, shape, layers, gguf.Q8_0, 7)
}

// run is one job's result: every rank's tokens, ranges and resident weight bytes.
type run struct {
	tokens [][]int32
	ranges [][2]int
	bytes  []int64
	errs   []error
}

// job loads the model at path over pp x tp in-process ranks with opt (mem: per rank, may be
// nil) and lets each rank call body; it returns what every rank saw.
func job(t *testing.T, path string, pp, tp int, opt Options, mem []int64, body func(pm *Model) ([]int32, error)) run {
	t.Helper()
	p := pp * tp
	res := run{tokens: make([][]int32, p), ranges: make([][2]int, p), bytes: make([]int64, p), errs: make([]error, p)}
	var mu sync.Mutex
	err := comm.Run(p, func(c *comm.Comm) error {
		f, err := gguf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		o := opt
		o.Stages = pp
		if o.Model.Context == 0 {
			o.Model.Context = 128
		}
		if mem != nil {
			o.Mem = mem[c.Rank()]
		}
		pm, err := Load(c, f, o)
		if err != nil {
			mu.Lock()
			res.errs[c.Rank()] = err
			mu.Unlock()
			return err
		}
		toks, err := body(pm)
		if err != nil {
			return err
		}
		l0, l1 := pm.Local.LayerRange()
		mu.Lock()
		res.tokens[c.Rank()], res.ranges[c.Rank()], res.bytes[c.Rank()] = toks, [2]int{l0, l1}, pm.Local.ResidentWeightBytes()
		mu.Unlock()
		return nil
	})
	if err != nil && res.errs[0] == nil {
		t.Fatalf("PP=%d TP=%d: %v", pp, tp, err)
	}
	return res
}

func greedy(prompt []int32, n int) func(pm *Model) ([]int32, error) {
	return func(pm *Model) ([]int32, error) {
		var out []int32
		err := pm.Generate(prompt, n, sample.Params{}, func(id int32) (bool, error) {
			out = append(out, id)
			return true, nil
		})
		return out, err
	}
}

// layouts are the (PP, TP) layouts of the issue.
var layouts = [][2]int{{2, 1}, {4, 1}, {2, 2}}

// checkLayouts compares the greedy tokens of every layout, on every rank, with one rank's.
func checkLayouts(t *testing.T, path string, prompt []int32, n int) {
	ref := job(t, path, 1, 1, Options{}, nil, greedy(prompt, n))
	want := ref.tokens[0]
	if len(want) != n {
		t.Fatalf("reference: %d tokens", len(want))
	}
	for _, l := range layouts {
		// A micro-batch of 3 tokens cuts the prompt into several.
		got := job(t, path, l[0], l[1], Options{UBatch: 3}, nil, greedy(prompt, n))
		for r, toks := range got.tokens {
			if !slices.Equal(toks, want) {
				t.Errorf("PP=%d TP=%d rank %d: tokens %v, want %v", l[0], l[1], r, toks, want)
			}
		}
		// Stages hold disjoint layers covering the model, and less than the whole model's weights.
		for r, rg := range got.ranges {
			s := r / l[1]
			if s > 0 && got.ranges[r-l[1]][1] != rg[0] || s == 0 && rg[0] != 0 {
				t.Errorf("PP=%d TP=%d: rank %d holds layers %v after %v", l[0], l[1], r, rg, got.ranges)
			}
			if got.bytes[r] >= ref.bytes[0] {
				t.Errorf("PP=%d TP=%d: rank %d holds %d weight bytes, the whole model %d", l[0], l[1], r, got.bytes[r], ref.bytes[0])
			}
		}
	}
}

func TestStoriesLayouts(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	// "Once upon a time" in stories260K's vocabulary, with BOS.
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := model.LoadTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tok.Encode("Once upon a time", true, true)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkLayouts(t, path, prompt, 24)
}

func TestSyntheticDenseLayouts(t *testing.T) {
	checkLayouts(t, synthetic(t, "tiny", 4), []int32{1, 17, 300, 42, 99, 5, 250, 7}, 12)
}

func TestSyntheticMoELayouts(t *testing.T) {
	checkLayouts(t, synthetic(t, "qwen3moe-tiny", 4), []int32{1, 17, 300, 42, 99, 5, 250, 7}, 12)
}

// Latent attention with a leading dense layer and shared experts (deepseek2): the stages after
// the first hold only mixture-of-experts layers.
func TestSyntheticMLALayouts(t *testing.T) {
	checkLayouts(t, synthetic(t, "deepseek2-tiny", 4), []int32{1, 17, 300, 42, 99, 5, 250, 7}, 8)
}

// Sampling: the last stage's logits reach every rank, which draw the same tokens from the same
// seeded stream as one rank does.
func TestSampledGeneration(t *testing.T) {
	path := synthetic(t, "tiny", 4)
	body := func(pm *Model) ([]int32, error) {
		var out []int32
		p := sample.Params{Temperature: 1.5, TopK: 0, TopP: 1, Seed: 42, RepeatPenalty: 1.1, RepeatLastN: 16}
		err := pm.Generate([]int32{1, 17, 300}, 16, p, func(id int32) (bool, error) {
			out = append(out, id)
			return true, nil
		})
		return out, err
	}
	want := job(t, path, 1, 1, Options{}, nil, body).tokens[0]
	for _, l := range layouts {
		got := job(t, path, l[0], l[1], Options{}, nil, body)
		for r, toks := range got.tokens {
			if !slices.Equal(toks, want) {
				t.Errorf("PP=%d TP=%d rank %d: sampled %v, want %v", l[0], l[1], r, toks, want)
			}
		}
	}
}

// With unequal memory the layers follow it: the stage of 3 GiB ranks takes three times the
// layers of the stage of 1 GiB ranks, and the tokens stay the same.
func TestMemorySplit(t *testing.T) {
	path := synthetic(t, "tiny", 8)
	prompt := []int32{1, 17, 300, 42}
	want := job(t, path, 1, 1, Options{}, nil, greedy(prompt, 8)).tokens[0]
	const G = 1 << 30
	for _, c := range []struct {
		pp, tp int
		mem    []int64
		ranges [][2]int
	}{
		{2, 1, []int64{3 * G, 1 * G}, [][2]int{{0, 6}, {6, 8}}},
		{2, 2, []int64{1 * G, 1 * G, 3 * G, 3 * G}, [][2]int{{0, 2}, {0, 2}, {2, 8}, {2, 8}}},
		// A stage's memory is its smallest rank's.
		{2, 2, []int64{4 * G, 2 * G, 2 * G, 2 * G}, [][2]int{{0, 4}, {0, 4}, {4, 8}, {4, 8}}},
		{4, 1, []int64{2 * G, 1 * G, 1 * G, 4 * G}, [][2]int{{0, 2}, {2, 3}, {3, 4}, {4, 8}}},
	} {
		got := job(t, path, c.pp, c.tp, Options{}, c.mem, greedy(prompt, 8))
		if !reflect.DeepEqual(got.ranges, c.ranges) {
			t.Errorf("PP=%d TP=%d memory %v: layers %v, want %v", c.pp, c.tp, c.mem, got.ranges, c.ranges)
		}
		for r, toks := range got.tokens {
			if !slices.Equal(toks, want) {
				t.Errorf("PP=%d TP=%d memory %v rank %d: tokens %v, want %v", c.pp, c.tp, c.mem, r, toks, want)
			}
		}
	}
	// A split by hand wins over memory.
	got := job(t, path, 2, 1, Options{Split: []int{1, 7}}, []int64{3 * G, 1 * G}, greedy(prompt, 8))
	if !reflect.DeepEqual(got.ranges, [][2]int{{0, 1}, {1, 8}}) || !slices.Equal(got.tokens[1], want) {
		t.Errorf("split 1,7: layers %v, tokens %v", got.ranges, got.tokens[1])
	}
}

// Several sequences in one pass (prompt chunks and decode tokens, as the server steps them):
// the same greedy tokens and sampled logits as one rank, whatever the micro-batch size.
func TestBatchOfSequences(t *testing.T) {
	path := synthetic(t, "tiny", 4)
	prompts := [][]int32{{1, 17, 300, 42, 99, 5, 250}, {1, 2, 3}, {1, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409}}
	body := func(pm *Model) ([]int32, error) {
		c, err := pm.Local.NewCache(len(prompts), 64)
		if err != nil {
			return nil, err
		}
		var seqs []model.Seq
		for i, p := range prompts {
			// the third prompt's first part is not at its end: no logits
			seqs = append(seqs, model.Seq{Slot: i, Tokens: p, Logits: i != 2})
		}
		if err := pm.ForwardBatch(c, seqs); err != nil {
			return nil, err
		}
		ids, err := pm.BatchArgmax(c)
		if err != nil {
			return nil, err
		}
		lg, err := pm.BatchLogits(c, []int{1})
		if err != nil {
			return nil, err
		}
		// The logits row's greedy token, as a check that BatchLogits gives row 1's.
		best := 0
		for i, v := range lg[0] {
			if v > lg[0][best] {
				best = i
			}
		}
		out := append(ids, int32(best))
		// A decode step of the first two and more of the third prompt.
		seqs = []model.Seq{{Slot: 0, Pos: len(prompts[0]), Tokens: ids[:1], Logits: true},
			{Slot: 2, Pos: len(prompts[2]), Tokens: []int32{7, 8, 9}, Logits: true},
			{Slot: 1, Pos: len(prompts[1]), Tokens: ids[1:2], Logits: true}}
		if err := pm.ForwardBatch(c, seqs); err != nil {
			return nil, err
		}
		more, err := pm.BatchArgmax(c)
		return append(out, more...), err
	}
	want := job(t, path, 1, 1, Options{}, nil, body).tokens[0]
	if len(want) != 6 {
		t.Fatalf("reference: %v", want)
	}
	for _, ub := range []int{1, 4, 32} {
		for _, l := range layouts {
			got := job(t, path, l[0], l[1], Options{UBatch: ub}, nil, body)
			for r, toks := range got.tokens {
				if !slices.Equal(toks, want) {
					t.Errorf("PP=%d TP=%d micro-batch %d rank %d: %v, want %v", l[0], l[1], ub, r, toks, want)
				}
			}
		}
	}
}

func TestMicroBatches(t *testing.T) {
	seqs := []model.Seq{{Slot: 0, Pos: 5, Tokens: []int32{1}, Logits: true},
		{Slot: 1, Pos: 0, Tokens: []int32{1, 2, 3, 4, 5}, Logits: true},
		{Slot: 2, Pos: 2, Tokens: []int32{6, 7, 8}}}
	got := fmt.Sprint(MicroBatches(seqs, 3))
	want := "[[{0 5 [1] true} {1 0 [1 2] false}] [{1 2 [3 4 5] true}] [{2 2 [6 7 8] false}]]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Layout errors reach every rank as errors, never a hang.
func TestLayoutErrors(t *testing.T) {
	path := synthetic(t, "tiny", 2)
	for _, c := range []struct {
		pp, p int
		split []int
		want  string
	}{
		{3, 4, nil, "--pp 3 does not divide the job's 4 ranks"},
		{4, 4, nil, "--pp 4: more pipeline stages than the model's 2 layers"},
		{2, 2, []int{1, 2}, "2 stages of 3 layers in all, want 2 stages of the model's 2 layers"},
		{2, 2, []int{2}, "1 stages of 2 layers in all, want 2 stages"},
	} {
		errs := make([]error, c.p)
		var mu sync.Mutex
		comm.Run(c.p, func(cm *comm.Comm) error {
			f, err := gguf.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = Load(cm, f, Options{Stages: c.pp, Split: c.split})
			mu.Lock()
			errs[cm.Rank()] = err
			mu.Unlock()
			return err
		})
		for r, err := range errs {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("PP=%d of %d ranks, split %v: rank %d: %v, want %q", c.pp, c.p, c.split, r, err, c.want)
			}
		}
	}
	if _, err := ParseSplit("2,x"); err == nil || !strings.Contains(err.Error(), `"x" is not a positive layer count`) {
		t.Errorf("ParseSplit: %v", err)
	}
}

func TestSplitByMemory(t *testing.T) {
	for _, c := range []struct {
		layers int
		mem    []int64
		want   []int
		even   bool
	}{
		{52, []int64{512, 512, 256, 256}, []int{17, 17, 9, 9}, false},
		{5, []int64{1, 1}, []int{3, 2}, false},
		{4, []int64{100, 1, 1, 1}, []int{1, 1, 1, 1}, false},
		{10, []int64{100, 1}, []int{9, 1}, false},
		{6, []int64{8, 0}, []int{3, 3}, true},
	} {
		got, even, err := SplitByMemory(c.layers, c.mem)
		if err != nil || !slices.Equal(got, c.want) || even != c.even {
			t.Errorf("%d layers over %v: %v even %v (%v), want %v even %v", c.layers, c.mem, got, even, err, c.want, c.even)
		}
	}
	if _, _, err := SplitByMemory(2, []int64{1, 1, 1}); err == nil {
		t.Error("3 stages of 2 layers accepted")
	}
}
