// Package model runs transformer language models from GGUF files: the architectures of the
// registry (Architectures; one arch_*.go file each: llama and mistral incl. Mixtral's
// experts, qwen2, qwen2moe, qwen3, qwen3moe, deepseek2 with latent attention), optionally
// split across the ranks of a Group in the Megatron style: attention by heads (Q/K/V
// column-parallel, output projection row-parallel), the MLP by hidden units (gate/up
// column-parallel, down row-parallel), mixtures of experts by whole experts (expert
// parallelism over the same ranks), one allreduce after each row-parallel block, and the
// classifier by vocabulary rows with a distributed argmax. Each rank maps the file and reads
// only its shard. One forward path serves a single sequence (Forward) and batches of
// sequences in a multi-slot cache (ForwardBatch).
package model

import (
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// Options tunes Load.
type Options struct {
	Group   Group // nil: a single rank
	Threads int   // goroutines per rank for matrix products (0: 1)
	Context int   // KV cache length in tokens (0: the model's context length, at most 4096)
	// KVType is the KV cache element type: "f16" (the default, as llama.cpp: half the memory;
	// queries and attention weights are rounded to F16 for their products with it, as there),
	// "f32", or ggml's block types "q8_0" and "q4_0" (see kvquant.go).
	KVType string
	// VType, when set, is the type of the values, KVType then being the keys' only.
	VType string
	// ExpertShares places a mixture of experts' routed experts on the ranks in proportion to
	// these weights (one per rank, >= 0; ranks with more memory can take more). nil: evenly.
	ExpertShares []int
	// Layers, when not {0, 0}, is the contiguous range [first, end) of layers this rank holds
	// (a pipeline stage, package llm/pipeline): only those layers are read, the first stage's
	// ranks also the token embedding, the last stage's the output norm and head. ForwardHidden
	// then takes and gives the residual stream at the range's edges.
	Layers [2]int
}

// Shard is the part of the model one rank holds.
type Shard struct {
	Rank, Size int
	H0, H1     int // query heads [H0,H1)
	KV0, KV1   int // KV heads [KV0,KV1) (overlapping between ranks when replicated)
	F0, F1     int // dense FFN hidden units [F0,F1)
	S0, S1     int // shared-expert hidden units [S0,S1)
	E0, E1     int // routed experts [E0,E1) (expert parallelism: whole experts per rank)
	V0, V1     int // vocabulary rows [V0,V1)
	O0, O1     int // columns of attn_output this rank multiplies (block aligned)
	// OGather: the head split is not aligned to attn_output's blocks, so attention outputs are
	// all-gathered and the product is split along [O0,O1) instead.
	OGather bool
}

type layer struct {
	block             Block
	attnNorm, ffnNorm []float32
	wq, wk, wv, wo    *quant.Matrix
	bq, bk, bv        []float32
	qNorm, kNorm      []float32
	gate, up, down    *quant.Matrix // dense MLP, or the shared expert's slice
	moe               *moeLayer
	mla               *mlaLayer
}

// Model is one rank's part of a loaded model plus its KV cache and scratch buffers.
type Model struct {
	Cfg     Config
	Shard   Shard
	file    *gguf.File
	group   Group
	pool    *quant.Pool
	ctx     int
	layers  []layer // layers [l0,l1) of the model, layers[i] being layer l0+i
	l0, l1  int
	embd    *gguf.TensorInfo
	outNorm []float32
	out     *quant.Matrix
	freqs   []float64 // RoPE inverse frequencies, RopeDim/2
	ropeFF  []float32 // rope_freqs.weight (nil: none)
	pos     int
	kType   kvType
	vType   kvType
	single  *Cache // the one sequence of Forward
	seq     [1]Seq

	logits  []float32 // local logits of the last token
	scratch scratch

	expertTokens []int64 // token-expert assignments per routed expert
}

// blockAlign returns the split of n units into parts, rounded to multiples of unit, for part k.
func splitRange(n, unit, parts, k int) (int, int) {
	nb := n / unit
	return nb * k / parts * unit, nb * (k + 1) / parts * unit
}

// PlanShard computes the shard of rank r of p for cfg and the tensor types of f, with the
// routed experts placed evenly.
func PlanShard(cfg *Config, f *gguf.File, r, p int) (Shard, error) {
	return planShard(cfg, f, r, p, nil)
}

// splitBlocks splits n hidden units, read from tensor name's rows of blocks, over p ranks.
func splitBlocks(f *gguf.File, name string, n, r, p int) (int, int, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return 0, 0, fmt.Errorf("%s: tensor %s missing", f.Path, name)
	}
	fb := t.Type.BlockSize()
	if n%fb != 0 {
		return 0, 0, fmt.Errorf("%s: %s: hidden size %d is not a whole number of %s blocks", f.Path, name, n, t.Type)
	}
	lo, hi := splitRange(n, fb, p, r)
	return lo, hi, nil
}

func planShard(cfg *Config, f *gguf.File, r, p int, shares []int) (Shard, error) {
	if err := cfg.CheckDegree(p); err != nil {
		return Shard{}, err
	}
	s := Shard{Rank: r, Size: p}
	s.H0, s.H1 = cfg.Heads*r/p, cfg.Heads*(r+1)/p
	g := cfg.Heads / cfg.KVHeads
	s.KV0, s.KV1 = s.H0/g, (s.H1-1)/g+1
	var err error
	for i := 0; i < cfg.Layers; i++ {
		if cfg.Block(i).MoE == nil {
			if s.F0, s.F1, err = splitBlocks(f, fmt.Sprintf("blk.%d.ffn_down.weight", i), cfg.FFN, r, p); err != nil {
				return Shard{}, err
			}
			break
		}
	}
	if cfg.Experts > 0 {
		if s.E0, s.E1, err = expertRange(cfg.Experts, r, p, shares); err != nil {
			return Shard{}, err
		}
	}
	if cfg.SharedFFN > 0 {
		for i := 0; i < cfg.Layers; i++ {
			if b := cfg.Block(i); b.MoE != nil && (b.MoE.SharedGate || b.MoE.Shared) {
				if s.S0, s.S1, err = splitBlocks(f, fmt.Sprintf("blk.%d.ffn_down_shexp.weight", i), cfg.SharedFFN, r, p); err != nil {
					return Shard{}, err
				}
				break
			}
		}
	}
	s.V0, s.V1 = cfg.Vocab*r/p, cfg.Vocab*(r+1)/p
	wo, ok := f.Tensor("blk.0.attn_output.weight")
	if !ok {
		return Shard{}, fmt.Errorf("%s: tensor blk.0.attn_output.weight missing", f.Path)
	}
	ob := wo.Type.BlockSize()
	hd := cfg.VHeadDim
	if (s.H0*hd)%ob == 0 && (s.H1*hd)%ob == 0 {
		s.O0, s.O1 = s.H0*hd, s.H1*hd
	} else {
		s.OGather = true
		s.O0, s.O1 = splitRange(cfg.Heads*hd, ob, p, r)
	}
	return s, nil
}

// expertRange gives rank r of p its routed experts [e0,e1) of n: in proportion to shares
// (one weight per rank), or evenly when shares is nil.
func expertRange(n, r, p int, shares []int) (int, int, error) {
	if shares == nil {
		return n * r / p, n * (r + 1) / p, nil
	}
	if len(shares) != p {
		return 0, 0, fmt.Errorf("expert shares %v: want one per rank (%d)", shares, p)
	}
	var total, before int
	for i, w := range shares {
		if w < 0 || w > 1<<20 {
			return 0, 0, fmt.Errorf("expert shares %v: weight %d out of [0, 2^20]", shares, w)
		}
		total += w
		if i < r {
			before += w
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("expert shares %v: all zero", shares)
	}
	return n * before / total, n * (before + shares[r]) / total, nil
}

// Load reads the rank's shard of the model in f (which must stay open while the model is used).
func Load(f *gguf.File, opt Options) (*Model, error) {
	g := opt.Group
	if g == nil {
		g = Single{}
	}
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	sh, err := planShard(cfg, f, g.Rank(), g.Size(), opt.ExpertShares)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	ctx := opt.Context
	if ctx <= 0 {
		ctx = min(cfg.ContextLen, 4096)
	}
	threads := max(opt.Threads, 1)
	m := &Model{Cfg: *cfg, Shard: sh, file: f, group: g, pool: &quant.Pool{Threads: threads}, ctx: ctx, l0: 0, l1: cfg.Layers}
	if opt.Layers != [2]int{} {
		if l0, l1 := opt.Layers[0], opt.Layers[1]; l0 < 0 || l1 <= l0 || l1 > cfg.Layers {
			return nil, fmt.Errorf("%s: layer range [%d,%d) is not inside the model's %d layers", f.Path, l0, l1, cfg.Layers)
		}
		m.l0, m.l1 = opt.Layers[0], opt.Layers[1]
	}
	if m.kType, err = parseKVType(opt.KVType); err != nil {
		return nil, err
	}
	m.vType = m.kType
	if opt.VType != "" {
		if m.vType, err = parseKVType(opt.VType); err != nil {
			return nil, err
		}
	}
	for _, t := range []kvType{m.kType, m.vType} {
		if cfg.KVLoraRank > 0 {
			// The latent cache (keys only): in q8_0 its KVLoraRank latent values are Q8_0 blocks.
			if t == kvQ4_0 {
				return nil, fmt.Errorf("model: KV cache type %s: %s's latent cache is f16, f32 or q8_0", t, cfg.Arch)
			}
			if t == kvQ8_0 && cfg.KVLoraRank%quant.QK8_0 != 0 {
				return nil, fmt.Errorf("model: KV cache type q8_0 stores blocks of 32, but %s's latent rank is %d: use f16 or f32", cfg.Arch, cfg.KVLoraRank)
			}
			continue
		}
		if err := t.checkWidth((sh.KV1 - sh.KV0) * cfg.HeadDim); err != nil {
			return nil, err
		}
	}
	if err := m.bind(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Model) tensor(name string, dims ...int) (*gguf.TensorInfo, error) {
	t, ok := m.file.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%s: tensor %s missing", m.file.Path, name)
	}
	if len(t.Dims) != len(dims) {
		return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", m.file.Path, name, t.Dims, dims)
	}
	for i, d := range dims {
		if t.Dims[i] != int64(d) {
			return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", m.file.Path, name, t.Dims, dims)
		}
	}
	if len(dims) >= 2 && !quant.Supported(t.Type) {
		return nil, fmt.Errorf("%s: tensor %s has type %s, which has no kernel here (supported: %s)", m.file.Path, name, t.Type, quant.SupportedNames())
	}
	return t, nil
}

// vector reads a 1-D tensor (norm weights, biases), or elements [lo,hi) of it.
func (m *Model) vector(name string, n, lo, hi int) ([]float32, error) {
	t, err := m.tensor(name, n)
	if err != nil {
		return nil, err
	}
	if !quant.Supported(t.Type) || t.Type.BlockSize() != 1 {
		return nil, fmt.Errorf("%s: tensor %s has type %s, want F32, F16 or BF16", m.file.Path, name, t.Type)
	}
	// pread, not the mapping: a fault would map the weights around the vector too.
	es := int64(t.Type.TypeSize())
	b := make([]byte, int64(hi-lo)*es)
	if err := m.file.ReadAt(t, b, int64(lo)*es); err != nil {
		return nil, err
	}
	v := make([]float32, hi-lo)
	return v, quant.Dequantize(t.Type, b, v)
}

// rows gives rows [r0,r1) of a matrix of shape [cols, rows]. With one rank they are bound to
// the mapping (no copy). With several they are read with pread: a page fault maps the cached
// pages around it too (fault-around, large folios), and at the edges of every shard those are
// another rank's rows, which added up to a fifth more resident memory per rank at TP=2.
func (m *Model) rows(name string, cols, rows, r0, r1 int) (*quant.Matrix, error) {
	t, err := m.tensor(name, cols, rows)
	if err != nil {
		return nil, err
	}
	rb, _ := t.Type.RowBytes(int64(cols))
	var b []byte
	if m.Shard.Size > 1 {
		b = make([]byte, int64(r1-r0)*rb)
		err = m.file.ReadAt(t, b, int64(r0)*rb)
	} else {
		b, err = m.file.Bytes(t, int64(r0)*rb, int64(r1-r0)*rb)
	}
	if err != nil {
		return nil, err
	}
	return quant.NewMatrix(t.Type, r1-r0, cols, b)
}

// cols gives columns [c0,c1) of every row of a matrix of shape [cols, rows]. The full width is
// bound to the mapping; a part is copied out with pread so that the other ranks' columns, which
// share pages with ours, never become resident in this process.
func (m *Model) cols(name string, cols, rows, c0, c1 int) (*quant.Matrix, error) {
	if c0 == 0 && c1 == cols {
		return m.rows(name, cols, rows, 0, rows)
	}
	t, err := m.tensor(name, cols, rows)
	if err != nil {
		return nil, err
	}
	rb, _ := t.Type.RowBytes(int64(cols))
	off, err := t.Type.RowBytes(int64(c0))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: column split at %d: %w", m.file.Path, name, c0, err)
	}
	seg, err := t.Type.RowBytes(int64(c1 - c0))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: column split at %d: %w", m.file.Path, name, c1, err)
	}
	buf := make([]byte, int64(rows)*seg)
	for r := 0; r < rows; r++ {
		if err := m.file.ReadAt(t, buf[int64(r)*seg:int64(r+1)*seg], int64(r)*rb+off); err != nil {
			return nil, err
		}
	}
	return quant.NewMatrix(t.Type, rows, c1-c0, buf)
}

// layerTensors lists layer i's tensors with their full shapes.
func (c *Config) layerTensors(i int) [][]any {
	hd := c.HeadDim
	b := c.Block(i)
	p := fmt.Sprintf("blk.%d.", i)
	need := [][]any{{p + "attn_norm.weight", c.Dim}, {p + "ffn_norm.weight", c.Dim}}
	if b.MLA {
		need = append(need, c.mlaTensors(p)...)
	} else {
		need = append(need, []any{p + "attn_q.weight", c.Dim, c.Heads * hd}, []any{p + "attn_k.weight", c.Dim, c.KVHeads * hd},
			[]any{p + "attn_v.weight", c.Dim, c.KVHeads * hd}, []any{p + "attn_output.weight", c.Heads * hd, c.Dim})
	}
	if b.AttnBias {
		need = append(need, []any{p + "attn_q.bias", c.Heads * hd}, []any{p + "attn_k.bias", c.KVHeads * hd}, []any{p + "attn_v.bias", c.KVHeads * hd})
	}
	if b.QKNorm {
		need = append(need, []any{p + "attn_q_norm.weight", hd}, []any{p + "attn_k_norm.weight", hd})
	}
	if b.MoE == nil {
		return append(need, []any{p + "ffn_gate.weight", c.Dim, c.FFN}, []any{p + "ffn_up.weight", c.Dim, c.FFN},
			[]any{p + "ffn_down.weight", c.FFN, c.Dim})
	}
	need = append(need, []any{p + "ffn_gate_inp.weight", c.Dim, c.Experts},
		[]any{p + "ffn_gate_exps.weight", c.Dim, c.ExpertFFN, c.Experts},
		[]any{p + "ffn_up_exps.weight", c.Dim, c.ExpertFFN, c.Experts},
		[]any{p + "ffn_down_exps.weight", c.ExpertFFN, c.Dim, c.Experts})
	if b.MoE.SharedGate {
		need = append(need, []any{p + "ffn_gate_inp_shexp.weight", c.Dim})
	}
	if b.MoE.SharedGate || b.MoE.Shared {
		need = append(need, []any{p + "ffn_gate_shexp.weight", c.Dim, c.SharedFFN}, []any{p + "ffn_up_shexp.weight", c.Dim, c.SharedFFN},
			[]any{p + "ffn_down_shexp.weight", c.SharedFFN, c.Dim})
	}
	return need
}

// validate checks every tensor the model needs (presence, shape, a type with kernels) before
// anything is read or allocated, so a bad file fails fast and identically on every rank.
func (m *Model) validate() error {
	c := &m.Cfg
	var need [][]any
	if m.first() || m.last() && c.TiedEmbed {
		need = append(need, []any{"token_embd.weight", c.Dim, c.Vocab})
	}
	if m.last() {
		need = append(need, []any{"output_norm.weight", c.Dim})
		if !c.TiedEmbed {
			need = append(need, []any{"output.weight", c.Dim, c.Vocab})
		}
	}
	if c.HasRopeFreq {
		need = append(need, []any{"rope_freqs.weight", c.RopeDim / 2})
	}
	for i := m.l0; i < m.l1; i++ {
		need = append(need, c.layerTensors(i)...)
	}
	for _, n := range need {
		dims := make([]int, len(n)-1)
		for i := range dims {
			dims[i] = n[i+1].(int)
		}
		t, err := m.tensor(n[0].(string), dims...)
		if err != nil {
			return err
		}
		if len(dims) == 1 && (!quant.Supported(t.Type) || t.Type.BlockSize() != 1) {
			return fmt.Errorf("%s: tensor %s has type %s, want F32, F16 or BF16", m.file.Path, t.Name, t.Type)
		}
	}
	return nil
}

func (m *Model) bind() error {
	if err := m.validate(); err != nil {
		return err
	}
	c, s := &m.Cfg, &m.Shard
	hd := c.HeadDim
	var err error
	if m.first() {
		if m.embd, err = m.tensor("token_embd.weight", c.Dim, c.Vocab); err != nil {
			return err
		}
	}
	if m.last() {
		if m.outNorm, err = m.vector("output_norm.weight", c.Dim, 0, c.Dim); err != nil {
			return err
		}
		outName := "output.weight"
		if c.TiedEmbed {
			outName = "token_embd.weight"
		}
		if m.out, err = m.rows(outName, c.Dim, c.Vocab, s.V0, s.V1); err != nil {
			return err
		}
	}
	m.freqs = make([]float64, c.RopeDim/2)
	for i := range m.freqs {
		m.freqs[i] = math.Pow(c.RopeBase, -float64(2*i)/float64(c.RopeDim))
	}
	if c.HasRopeFreq {
		ff, err := m.vector("rope_freqs.weight", c.RopeDim/2, 0, c.RopeDim/2)
		if err != nil {
			return err
		}
		for i := range m.freqs {
			if ff[i] <= 0 {
				return fmt.Errorf("%s: rope_freqs.weight[%d] = %g", m.file.Path, i, ff[i])
			}
			m.freqs[i] /= float64(ff[i])
		}
		m.ropeFF = ff
	}
	m.layers = make([]layer, m.l1-m.l0)
	for k := range m.layers {
		L := &m.layers[k]
		i := m.l0 + k
		L.block = c.Block(i)
		p := fmt.Sprintf("blk.%d.", i)
		if L.attnNorm, err = m.vector(p+"attn_norm.weight", c.Dim, 0, c.Dim); err != nil {
			return err
		}
		if L.ffnNorm, err = m.vector(p+"ffn_norm.weight", c.Dim, 0, c.Dim); err != nil {
			return err
		}
		if L.block.MLA {
			if err := m.bindMLA(L, p); err != nil {
				return err
			}
		} else if L.wq, err = m.rows(p+"attn_q.weight", c.Dim, c.Heads*hd, s.H0*hd, s.H1*hd); err != nil {
			return err
		}
		if !L.block.MLA {
			if L.wk, err = m.rows(p+"attn_k.weight", c.Dim, c.KVHeads*hd, s.KV0*hd, s.KV1*hd); err != nil {
				return err
			}
			if L.wv, err = m.rows(p+"attn_v.weight", c.Dim, c.KVHeads*hd, s.KV0*hd, s.KV1*hd); err != nil {
				return err
			}
		}
		if L.wo, err = m.cols(p+"attn_output.weight", c.Heads*c.VHeadDim, c.Dim, s.O0, s.O1); err != nil {
			return err
		}
		if L.block.AttnBias {
			if L.bq, err = m.vector(p+"attn_q.bias", c.Heads*hd, s.H0*hd, s.H1*hd); err != nil {
				return err
			}
			if L.bk, err = m.vector(p+"attn_k.bias", c.KVHeads*hd, s.KV0*hd, s.KV1*hd); err != nil {
				return err
			}
			if L.bv, err = m.vector(p+"attn_v.bias", c.KVHeads*hd, s.KV0*hd, s.KV1*hd); err != nil {
				return err
			}
		}
		if L.block.QKNorm {
			if L.qNorm, err = m.vector(p+"attn_q_norm.weight", hd, 0, hd); err != nil {
				return err
			}
			if L.kNorm, err = m.vector(p+"attn_k_norm.weight", hd, 0, hd); err != nil {
				return err
			}
		}
		if L.block.MoE != nil {
			if err := m.bindMoE(L, p); err != nil {
				return err
			}
			continue
		}
		if L.gate, err = m.rows(p+"ffn_gate.weight", c.Dim, c.FFN, s.F0, s.F1); err != nil {
			return err
		}
		if L.up, err = m.rows(p+"ffn_up.weight", c.Dim, c.FFN, s.F0, s.F1); err != nil {
			return err
		}
		if L.down, err = m.cols(p+"ffn_down.weight", c.FFN, c.Dim, s.F0, s.F1); err != nil {
			return err
		}
	}
	// The cache comes last, so that a bad tensor anywhere fails before it is allocated.
	if m.single, err = m.NewCache(1, m.ctx); err != nil {
		return err
	}
	m.logits = make([]float32, s.V1-s.V0)
	m.expertTokens = make([]int64, c.Experts)
	return nil
}

// weights lists the matrices this rank's shard references.
func (m *Model) weights() []*quant.Matrix {
	var ms []*quant.Matrix
	for _, L := range m.layers {
		for _, w := range []*quant.Matrix{L.wq, L.wk, L.wv, L.wo} {
			if w != nil {
				ms = append(ms, w)
			}
		}
		if a := L.mla; a != nil {
			ms = append(ms, a.wkvA)
			ms = append(ms, a.kbT...)
			ms = append(ms, a.vb...)
			if a.wqA != nil {
				ms = append(ms, a.wqA)
			}
		}
		if L.gate != nil {
			ms = append(ms, L.gate, L.up, L.down)
		}
		if e := L.moe; e != nil {
			ms = append(ms, e.router)
			ms = append(ms, e.gate...)
			ms = append(ms, e.up...)
			ms = append(ms, e.down...)
		}
	}
	if m.out != nil {
		ms = append(ms, m.out)
	}
	return ms
}

// first reports whether this rank's layers start the model (it embeds the tokens), last
// whether they end it (it computes the logits).
func (m *Model) first() bool { return m.l0 == 0 }
func (m *Model) last() bool  { return m.l1 == m.Cfg.Layers }

// LayerRange returns the layers [first, end) this rank holds.
func (m *Model) LayerRange() (int, int) { return m.l0, m.l1 }

// SingleCache returns the one-slot cache Forward uses (for a caller that drives ForwardHidden
// over it, as a pipeline stage does).
func (m *Model) SingleCache() *Cache { return m.single }

// Context returns the KV cache length.
func (m *Model) Context() int { return m.ctx }

// Pos returns the number of tokens in the KV cache.
func (m *Model) Pos() int { return m.pos }

// Reset empties the KV cache.
func (m *Model) Reset() { m.pos = 0 }

// ResidentWeightBytes is the number of weight bytes this rank's shard references.
func (m *Model) ResidentWeightBytes() int64 {
	var n int64
	for _, w := range m.weights() {
		n += int64(len(w.Data))
	}
	return n
}

// Touch reads one byte of every page of this rank's weights so that the first tokens do not
// pay the page faults (and a user sees loading progress); progress, if not nil, is called with
// the bytes done and the total.
func (m *Model) Touch(progress func(done, total int64)) byte {
	ms := m.weights()
	total := m.ResidentWeightBytes()
	var done int64
	var sum byte
	for _, w := range ms {
		w.Repack() // the kernels' layout, once, replacing the mapped rows (quant/repack.go)
		for i := 0; i < len(w.Data); i += 4096 {
			sum += w.Data[i]
		}
		done += int64(len(w.Data))
		if progress != nil {
			progress(done, total)
		}
	}
	return sum
}
