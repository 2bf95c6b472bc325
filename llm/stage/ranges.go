// Package stage computes which bytes of a model each tensor-parallel rank reads, and copies
// exactly those bytes to the hosts of a job over the job's communicator ("llm stage"): each
// host gets a sparse copy of the model file holding its ranks' shards and the shared tensors,
// a checksum per tensor, and a manifest that says which layout the copy serves, so that
// "llm generate" and "llm serve" load from it and a staging interrupted midway resumes without
// resending what was already received.
package stage

import (
	"fmt"
	"slices"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// Piece is a byte range of one tensor's data: [Off, Off+Len).
type Piece struct{ Off, Len int64 }

// Needs maps a tensor name to the sorted, disjoint pieces of it that are read.
type Needs map[string][]Piece

// Bytes returns the bytes n covers.
func (n Needs) Bytes() int64 {
	var s int64
	for _, ps := range n {
		for _, p := range ps {
			s += p.Len
		}
	}
	return s
}

// Add merges o into n.
func (n Needs) Add(o Needs) {
	for name, ps := range o {
		n[name] = merge(append(append([]Piece(nil), n[name]...), ps...))
	}
}

func merge(ps []Piece) []Piece {
	slices.SortFunc(ps, func(a, b Piece) int {
		if a.Off != b.Off {
			if a.Off < b.Off {
				return -1
			}
			return 1
		}
		return 0
	})
	out := ps[:0]
	for _, p := range ps {
		if p.Len <= 0 {
			continue
		}
		if k := len(out); k > 0 && p.Off <= out[k-1].Off+out[k-1].Len {
			out[k-1].Len = max(out[k-1].Len, p.Off+p.Len-out[k-1].Off)
			continue
		}
		out = append(out, p)
	}
	return out
}

// ShardNeeds returns the bytes that rank r of a tensor-parallel group of p reads from f when it
// loads its shard, as model.Load binds it: row ranges of the column-parallel matrices, a column
// range of every row of the row-parallel ones, its vocabulary rows of the classifier, and the
// whole of the norms and the token embedding (read a row per token).
func ShardNeeds(f *gguf.File, r, p int) (Needs, error) {
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	s, err := model.PlanShard(cfg, f, r, p)
	if err != nil {
		return nil, err
	}
	return needsFor(f, cfg, s, 0, cfg.Layers, true, true)
}

// needsFor is ShardNeeds for shard s restricted to layers [l0,l1), with or without the
// embedding (first pipeline stage) and the classifier (last).
func needsFor(f *gguf.File, c *model.Config, s model.Shard, l0, l1 int, embed, head bool) (Needs, error) {
	n := Needs{}
	var err error
	tensor := func(name string) (*gguf.TensorInfo, bool) {
		t, ok := f.Tensor(name)
		if !ok && err == nil {
			err = fmt.Errorf("%s: tensor %s missing", f.Path, name)
		}
		return t, ok
	}
	whole := func(name string) {
		if t, ok := tensor(name); ok {
			n[name] = []Piece{{0, t.Size}}
		}
	}
	rowBytes := func(t *gguf.TensorInfo, cols int64) int64 {
		b, e := t.Type.RowBytes(cols)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", t.Name, e)
		}
		return b
	}
	rows := func(name string, r0, r1 int) {
		if t, ok := tensor(name); ok {
			rb := rowBytes(t, t.Dims[0])
			n[name] = merge(append(n[name], Piece{int64(r0) * rb, int64(r1-r0) * rb}))
		}
	}
	elems := func(name string, e0, e1 int) { // of a vector of a plain type (F32, F16, BF16)
		if t, ok := tensor(name); ok {
			es := int64(t.Type.TypeSize())
			n[name] = []Piece{{int64(e0) * es, int64(e1-e0) * es}}
		}
	}
	optional := func(name string) {
		if _, ok := f.Tensor(name); ok {
			whole(name)
		}
	}
	// experts: routed experts [e0,e1) of a [cols, rows, experts] tensor, one after another.
	experts := func(name string, e0, e1 int) {
		if t, ok := tensor(name); ok && len(t.Dims) == 3 {
			eb := rowBytes(t, t.Dims[0]) * t.Dims[1]
			n[name] = []Piece{{int64(e0) * eb, int64(e1-e0) * eb}}
		} else if ok && err == nil {
			err = fmt.Errorf("%s: tensor %s has shape %v, want 3 dimensions", f.Path, name, t.Dims)
		}
	}
	cols := func(name string, c0, c1 int) {
		t, ok := tensor(name)
		if !ok {
			return
		}
		if c0 == 0 && int64(c1) == t.Dims[0] {
			whole(name)
			return
		}
		rb, off, seg := rowBytes(t, t.Dims[0]), rowBytes(t, int64(c0)), rowBytes(t, int64(c1-c0))
		nrows := t.Elements() / t.Dims[0]
		ps := make([]Piece, 0, nrows)
		for r := int64(0); r < nrows; r++ {
			ps = append(ps, Piece{r*rb + off, seg})
		}
		n[name] = ps
	}
	hd := c.HeadDim
	if embed {
		whole("token_embd.weight")
	}
	if head {
		whole("output_norm.weight")
		out := "output.weight"
		if c.TiedEmbed {
			out = "token_embd.weight"
		}
		rows(out, s.V0, s.V1)
	}
	if c.HasRopeFreq {
		whole("rope_freqs.weight")
	}
	for i := l0; i < l1; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		whole(p + "attn_norm.weight")
		whole(p + "ffn_norm.weight")
		blk := c.Block(i)
		if blk.MLA { // as model.bindMLA reads it
			if c.QLoraRank > 0 {
				whole(p + "attn_q_a.weight")
				whole(p + "attn_q_a_norm.weight")
				rows(p+"attn_q_b.weight", s.H0*hd, s.H1*hd)
			} else {
				rows(p+"attn_q.weight", s.H0*hd, s.H1*hd)
			}
			whole(p + "attn_kv_a_mqa.weight")
			whole(p + "attn_kv_a_norm.weight")
			w := hd - c.RopeDim + c.VHeadDim
			rows(p+"attn_kv_b.weight", s.H0*w, s.H1*w)
		} else {
			rows(p+"attn_q.weight", s.H0*hd, s.H1*hd)
			rows(p+"attn_k.weight", s.KV0*hd, s.KV1*hd)
			rows(p+"attn_v.weight", s.KV0*hd, s.KV1*hd)
		}
		cols(p+"attn_output.weight", s.O0, s.O1)
		if blk.AttnBias {
			elems(p+"attn_q.bias", s.H0*hd, s.H1*hd)
			elems(p+"attn_k.bias", s.KV0*hd, s.KV1*hd)
			elems(p+"attn_v.bias", s.KV0*hd, s.KV1*hd)
		}
		if blk.QKNorm {
			whole(p + "attn_q_norm.weight")
			whole(p + "attn_k_norm.weight")
		}
		if blk.MoE == nil {
			rows(p+"ffn_gate.weight", s.F0, s.F1)
			rows(p+"ffn_up.weight", s.F0, s.F1)
			cols(p+"ffn_down.weight", s.F0, s.F1)
			continue
		}
		// A mixture of experts, as model.bindMoE reads it: the router whole, whole experts
		// [E0,E1) (expert parallelism), a slice of the shared expert.
		whole(p + "ffn_gate_inp.weight")
		optional(p + "exp_probs_b.bias")
		experts(p+"ffn_gate_exps.weight", s.E0, s.E1)
		experts(p+"ffn_up_exps.weight", s.E0, s.E1)
		experts(p+"ffn_down_exps.weight", s.E0, s.E1)
		if blk.MoE.SharedGate {
			whole(p + "ffn_gate_inp_shexp.weight")
		}
		if blk.MoE.SharedGate || blk.MoE.Shared {
			rows(p+"ffn_gate_shexp.weight", s.S0, s.S1)
			rows(p+"ffn_up_shexp.weight", s.S0, s.S1)
			cols(p+"ffn_down_shexp.weight", s.S0, s.S1)
		}
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// StageNeeds is the bytes of layers [l0,l1) that rank r of a tensor-parallel group of p within
// one pipeline stage reads, with the embedding on the first stage and the classifier on the
// last: what a contiguous-layer-range pipeline layout would place on that rank.
func StageNeeds(f *gguf.File, r, p, l0, l1 int, first, last bool) (Needs, error) {
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	s, err := model.PlanShard(cfg, f, r, p)
	if err != nil {
		return nil, err
	}
	if l0 < 0 || l1 > cfg.Layers || l0 > l1 {
		return nil, fmt.Errorf("layers [%d,%d) outside the model's %d", l0, l1, cfg.Layers)
	}
	return needsFor(f, cfg, s, l0, l1, first, last)
}

// Layout is the job that loads staged copies: PP pipeline stages of TP ranks each, as package
// pipeline places them (rank r is stage r/TP, tensor-parallel rank r%TP in it), stage s
// holding the next Split[s] layers.
type Layout struct {
	PP, TP int
	Split  []int // layers per stage, in order; nil or empty with PP = 1 (all layers)
}

// Ranks is the job's size.
func (l Layout) Ranks() int { return l.PP * l.TP }

func (l Layout) String() string {
	if l.PP <= 1 {
		return fmt.Sprintf("TP=%d", l.TP)
	}
	return fmt.Sprintf("PP=%d x TP=%d, layer split %s", l.PP, l.TP, SplitString(l.Split))
}

// SplitString writes a layer split as --layer-split takes it.
func SplitString(split []int) string {
	s := ""
	for i, v := range split {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(v)
	}
	return s
}

// Check checks l against a model of the given layers.
func (l Layout) Check(layers int) error {
	if l.PP < 1 || l.TP < 1 {
		return fmt.Errorf("layout PP=%d x TP=%d: want at least one stage of at least one rank", l.PP, l.TP)
	}
	if l.PP == 1 && len(l.Split) == 0 {
		return nil
	}
	total := 0
	for _, v := range l.Split {
		if v < 1 {
			return fmt.Errorf("layer split %s: a stage of %d layers", SplitString(l.Split), v)
		}
		total += v
	}
	if len(l.Split) != l.PP || total != layers {
		return fmt.Errorf("layer split %s: %d stages of %d layers in all, want %d stages of the model's %d layers",
			SplitString(l.Split), len(l.Split), total, l.PP, layers)
	}
	return nil
}

// RankNeeds returns the bytes that rank r of a job of layout l reads from f: its
// tensor-parallel shard of its stage's layers, the embedding on the first stage and the
// output norm and head on the last.
func RankNeeds(f *gguf.File, l Layout, r int) (Needs, error) {
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if err := l.Check(cfg.Layers); err != nil {
		return nil, err
	}
	if r < 0 || r >= l.Ranks() {
		return nil, fmt.Errorf("rank %d of a job of %d ranks", r, l.Ranks())
	}
	s, l0, l1 := r/l.TP, 0, cfg.Layers
	if len(l.Split) > 0 {
		for i := 0; i < s; i++ {
			l0 += l.Split[i]
		}
		l1 = l0 + l.Split[s]
	}
	sh, err := model.PlanShard(cfg, f, r%l.TP, l.TP)
	if err != nil {
		return nil, err
	}
	return needsFor(f, cfg, sh, l0, l1, s == 0, s == l.PP-1)
}
