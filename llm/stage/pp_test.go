package stage_test

// Staging for pipeline layouts, loaded by package pipeline (which imports package stage, so
// these tests are outside it).

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/model/modeltest"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/stage"
)

func synthetic(t *testing.T, shape string, layers int) string {
	return modeltest.Synthetic(t, shape, layers, gguf.Q8_0, 7)
}

type decoded struct {
	tokens []int32
	logits []float32 // after the prompt
}

// decode runs a pp x tp job of in-process ranks, rank r opening path(r) as llm generate does:
// through stage.Resolve with split (nil: the staged copy's), the ranks agreeing on success
// before loading. It returns rank 0's greedy tokens and every rank's Resolve error.
func decode(t *testing.T, path func(r int) string, pp, tp int, split []int) (decoded, []error) {
	t.Helper()
	p := pp * tp
	var res decoded
	errs := make([]error, p)
	var mu sync.Mutex
	err := comm.Run(p, func(c *comm.Comm) error {
		mp, man, rerr := stage.Resolve(path(c.Rank()), c.Rank(), stage.Layout{PP: pp, TP: tp, Split: split})
		bad := make([]int64, p)
		if err := collectives.Allgather(c, []int64{b2i(rerr != nil)}, bad); err != nil {
			return err
		}
		if rerr != nil {
			mu.Lock()
			errs[c.Rank()] = rerr
			mu.Unlock()
			return nil
		}
		if i := slices.Index(bad, 1); i >= 0 {
			mu.Lock()
			errs[c.Rank()] = fmt.Errorf("rank %d failed to resolve", i)
			mu.Unlock()
			return nil
		}
		o := pipeline.Options{Stages: pp, Split: split, Model: model.Options{Context: 64}}
		if o.Split == nil && man != nil && pp > 1 {
			o.Split = man.Split
		}
		f, err := gguf.Open(mp)
		if err != nil {
			return err
		}
		defer f.Close()
		pm, err := pipeline.Load(c, f, o)
		if err != nil {
			return err
		}
		var d decoded
		if err := pm.Forward([]int32{1, 403, 407, 261, 378}); err != nil {
			return err
		}
		if d.logits, err = pm.Logits(); err != nil {
			return err
		}
		for len(d.tokens) < 12 {
			id, err := pm.Argmax()
			if err != nil {
				return err
			}
			d.tokens = append(d.tokens, id)
			if err := pm.Forward([]int32{id}); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			res = d
		}
		return nil
	})
	if err != nil {
		t.Fatalf("PP=%d TP=%d: %v", pp, tp, err)
	}
	return res, errs
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// stageJob stages src for layout l with one in-process staging rank per rank of the job,
// rank r on host hostOf(r) (directory root/HOST), the model on rank 0 only.
func stageJob(t *testing.T, src, root string, l stage.Layout, hostOf func(r int) string) ([]stage.Result, error) {
	t.Helper()
	res := make([]stage.Result, l.Ranks())
	var mu sync.Mutex
	err := comm.Run(l.Ranks(), func(c *comm.Comm) error {
		opt := stage.Options{Model: filepath.Join(root, "absent.gguf"), Dir: filepath.Join(root, hostOf(c.Rank())),
			PP: l.PP, TP: l.TP, Split: l.Split, HostOf: hostOf}
		if c.Rank() == 0 {
			opt.Model = src
		}
		r, err := stage.Stage(c, opt)
		mu.Lock()
		res[c.Rank()] = r
		mu.Unlock()
		return err
	})
	return res, err
}

// stageTensors is the set of tensors stage s of layout l holds, from the tensor names alone.
func stageTensors(f *gguf.File, l stage.Layout, s int) map[string]bool {
	l0 := 0
	for i := 0; i < s; i++ {
		l0 += l.Split[i]
	}
	out := map[string]bool{}
	for _, t := range f.Tensors {
		var i int
		switch {
		case strings.HasPrefix(t.Name, "blk."):
			fmt.Sscanf(t.Name, "blk.%d.", &i)
			if i >= l0 && i < l0+l.Split[s] {
				out[t.Name] = true
			}
		case t.Name == "token_embd.weight":
			out[t.Name] = s == 0
		case t.Name == "output_norm.weight", t.Name == "output.weight":
			out[t.Name] = s == l.PP-1
		default: // rope_freqs and the like: every stage
			out[t.Name] = true
		}
		if !out[t.Name] {
			delete(out, t.Name)
		}
	}
	return out
}

// For (PP, TP) = (2,1), (2,2), (4,1) on stories260K and a mixture of experts: each host's
// staged copy (one host per stage, or two stages per host) gives the greedy tokens and the
// logits of the full file at that layout; each host received exactly the byte ranges of its
// ranks, nothing else is on its disk, and a stage's hosts between them cover exactly the
// stage's tensors; another layout is refused on every rank with what differs.
func TestStagePipelineLayouts(t *testing.T) {
	type layout struct {
		pp, tp  int
		perHost int // ranks per host
	}
	all := []layout{{2, 1, 1}, {2, 2, 2}, {4, 1, 2}}
	models := []struct {
		name, path string
		layouts    []layout
	}{
		{"stories260K", testfiles.Path(t, "llm", "stories260K.gguf"), all}, // 5 layers
		{"qwen2moe", synthetic(t, "qwen2moe-tiny", 4), all},                // routed and shared experts
		// Latent attention, a leading dense layer, routed experts with a score bias.
		{"deepseek2", synthetic(t, "deepseek2-tiny", 3), []layout{{2, 1, 1}, {2, 2, 2}}},
	}
	for _, mc := range models {
		f, err := gguf.Open(mc.path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := model.ReadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := decode(t, func(int) string { return mc.path }, 1, 1, nil)
		for _, c := range mc.layouts {
			split := make([]int, c.pp) // uneven: the first stage takes the layers left over
			for s := range split {
				split[s] = cfg.Layers / c.pp
			}
			split[0] += cfg.Layers % c.pp
			if c.pp == 2 {
				split = []int{cfg.Layers - 1, 1}
			}
			l := stage.Layout{PP: c.pp, TP: c.tp, Split: split}
			name := fmt.Sprintf("%s/PP=%d,TP=%d", mc.name, c.pp, c.tp)
			root := t.TempDir()
			hostOf := func(r int) string { return fmt.Sprintf("h%d", r/c.perHost) }
			res, err := stageJob(t, mc.path, root, l, hostOf)
			if err != nil {
				t.Fatalf("%s: stage: %v", name, err)
			}
			hosts := l.Ranks() / c.perHost
			for h := 0; h < hosts; h++ {
				want := stage.Needs{}
				for r := h * c.perHost; r < (h+1)*c.perHost; r++ {
					n, err := stage.RankNeeds(f, l, r)
					if err != nil {
						t.Fatal(err)
					}
					want.Add(n)
				}
				r0 := h * c.perHost
				if !res[r0].Receiver || res[r0].Received != want.Bytes() {
					t.Errorf("%s: host %d received %d bytes, want %d (its ranks' ranges)", name, h, res[r0].Received, want.Bytes())
				}
				stage.CheckOnly(t, filepath.Join(root, hostOf(r0), stage.ModelFile), want)
			}
			// A stage's tensor-parallel ranks read, between them, all of the stage's tensors
			// and nothing of the other stages'.
			for s := 0; s < c.pp; s++ {
				u := stage.Needs{}
				for r := s * c.tp; r < (s+1)*c.tp; r++ {
					n, _ := stage.RankNeeds(f, l, r)
					u.Add(n)
				}
				tensors := stageTensors(f, l, s)
				var bytes int64
				for name := range tensors {
					ti, _ := f.Tensor(name)
					bytes += ti.Size
				}
				if len(u) != len(tensors) || u.Bytes() != bytes {
					t.Errorf("%s: stage %d's ranks read %d bytes of %d tensors, want all %d of its %d", name, s, u.Bytes(), len(u), bytes, len(tensors))
				}
				for n := range u {
					if !tensors[n] {
						t.Errorf("%s: stage %d reads %s", name, s, n)
					}
				}
			}
			dir := func(r int) string { return filepath.Join(root, hostOf(r)) }
			ref, _ := decode(t, func(int) string { return mc.path }, c.pp, c.tp, split)
			got, _ := decode(t, dir, c.pp, c.tp, nil)
			if !slices.Equal(got.tokens, ref.tokens) || !slices.Equal(got.logits, ref.logits) || !slices.Equal(got.tokens, full.tokens) {
				t.Errorf("%s: staged copies decode %v; the file at this layout %v, on one rank %v", name, got.tokens, ref.tokens, full.tokens)
			}

			// Mismatches: every rank refuses, naming what differs.
			otherSplit := slices.Clone(split)
			otherSplit[0], otherSplit[1] = otherSplit[1], otherSplit[0]
			if slices.Equal(otherSplit, split) {
				otherSplit[0]++
				otherSplit[1]--
			}
			otherPP := stage.Layout{PP: l.Ranks(), TP: 1}
			if c.pp == l.Ranks() {
				otherPP = stage.Layout{PP: 1, TP: l.Ranks()}
			}
			for _, m := range []struct {
				what   string
				pp, tp int
				split  []int
				dir    func(r int) string
				want   string
			}{
				{"other pp", otherPP.PP, otherPP.TP, nil, dir, "was staged for " + l.String()},
				{"other layer split", c.pp, c.tp, otherSplit, dir, "was staged with layer split " + stage.SplitString(split)},
				// Ranks placed round-robin over the hosts instead of consecutively.
				{"other ranks per host", c.pp, c.tp, nil, func(r int) string { return dir((r % hosts) * c.perHost) }, "this host's ranks differ"},
			} {
				if m.what == "other ranks per host" && c.perHost == 1 {
					m.dir = func(r int) string { return dir((r + 1) % l.Ranks()) }
				}
				_, errs := decode(t, m.dir, m.pp, m.tp, m.split)
				for r, e := range errs {
					if m.what == "other ranks per host" && m.dir(r) == dir(r) {
						continue // this rank's own host is right
					}
					if e == nil || !strings.Contains(e.Error(), m.want) {
						t.Errorf("%s, %s: rank %d: %v, want %q", name, m.what, r, e, m.want)
					}
				}
			}
		}
		f.Close()
	}
}
