package model

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// Upcycle says how WriteUpcycled turns a trained dense llama model into a wider one, dense or
// with experts.
type Upcycle struct {
	Arch string // llama, qwen2moe or deepseek2
	// Dim and FFN are the widened embedding and hidden sizes (at least the source's): the
	// extra dimensions are zero, so K-quants (rows of 256) apply without changing the function.
	Dim, FFN int
	// Experts routed experts per layer (0 with Arch llama: a dense model), ExpertsUsed per
	// token.
	Experts, ExpertsUsed int
	// Perturb is the size of each expert's perturbation relative to the dense FFN: every
	// element of the expert's gate, up and down matrices is the dense one plus
	// Perturb*rms(matrix)*N(0,1).
	Perturb float64
	// RouterScale: router weights are RouterScale*N(0,1)/sqrt(source dim).
	RouterScale float64
	Seed        uint64
}

// DefaultUpcycle is the shape of the upcycled test models: dim and FFN 256, 8 experts, 2 per
// token.
var DefaultUpcycle = Upcycle{Dim: 256, FFN: 256, Experts: 8, ExpertsUsed: 2, Perturb: 0.2, RouterScale: 2, Seed: 1}

// upcycleSource is the dense model's weights, dequantized.
type upcycleSource struct {
	f   *gguf.File
	cfg *Config
}

// matrix returns tensor name of the source as rows of cols values.
func (s upcycleSource) matrix(name string, cols, rows int) ([][]float64, error) {
	ti, ok := s.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("model: upcycle: %s has no tensor %s", s.f.Path, name)
	}
	if ti.Elements() != int64(cols)*int64(rows) || ti.Dims[0] != int64(cols) {
		return nil, fmt.Errorf("model: upcycle: %s has shape %v, want [%d %d]", name, ti.Dims, cols, rows)
	}
	rb, err := ti.Type.RowBytes(int64(cols))
	if err != nil {
		return nil, err
	}
	data := s.f.TensorData(ti)
	if int64(len(data)) != rb*int64(rows) {
		return nil, fmt.Errorf("model: upcycle: %s holds %d bytes, want %d", name, len(data), rb*int64(rows))
	}
	x := make([]float32, cols)
	out := make([][]float64, rows)
	for r := range out {
		if err := quant.Dequantize(ti.Type, data[int64(r)*rb:int64(r+1)*rb], x); err != nil {
			return nil, fmt.Errorf("model: upcycle: %s: %w", name, err)
		}
		out[r] = make([]float64, cols)
		for j, v := range x {
			out[r][j] = float64(v)
		}
	}
	return out, nil
}

// WriteUpcycled writes, as F32, the dense llama model of src (F32, F16 or quantized, no
// biases, untied output) widened to u.Dim and u.FFN, and for u.Experts > 0 upcycled to a
// mixture of experts of family u.Arch (sparse upcycling, as Mixtral-style models are started):
//
//   - widening: the token embeddings, the residual stream and the FFN hidden units gain zero
//     dimensions; each RMSNorm weight is multiplied by sqrt(old/new dim) and epsilon by
//     old/new, so the norm of the wider vector is the narrow one's, and the function is
//     unchanged (the heads keep their size through attention.key_length).
//   - llama: every expert is the dense FFN plus its perturbation (u.Perturb), the router
//     random (u.RouterScale), top-k softmax weights renormalised: output = FFN + sum w*delta.
//   - qwen2moe: the shared expert is the dense FFN, its sigmoid gate small (~0.5); the routed
//     experts are the perturbed FFN with down halved; top-k softmax probabilities are not
//     renormalised, so the output is (0.5 + 0.5*p)*FFN + ..., p the chosen experts' mass.
//     Attention biases are zero. Its heads are dim/heads wide (see qwenHeads): exact.
//   - deepseek2: layer 0 dense (the dense FFN), then MoE layers with one shared expert (the
//     dense FFN, down halved) and routed experts (perturbed, down multiplied by 0.5/2.5)
//     under sigmoid scores with a random score bias, weights renormalised and scaled by 2.5:
//     output = FFN + 0.5*sum w*delta. Latent attention cannot hold the trained attention
//     exactly: both latents (q and kv, rank = source dim) are the normalised input itself,
//     whose RMS over the active dims is constant, so their RMSNorms are linear; key heads are
//     8 non-rotary + 8 rotary values (the trained head size each). The single rotary key is
//     KV head 0: query heads of KV head 0 put their query in the rotary part (exact), the
//     other heads put query and key in the non-rotary part (their scores lose the rotation).
//     Values are exact.
func WriteUpcycled(w io.Writer, src *gguf.File, u Upcycle) error {
	cfg, err := ReadConfig(src)
	if err != nil {
		return err
	}
	if cfg.Arch != "llama" || cfg.Experts > 0 {
		return fmt.Errorf("model: upcycle: %s is %s with %d experts, want a dense llama model", src.Path, cfg.Arch, cfg.Experts)
	}
	if _, ok := src.Tensor("output.weight"); !ok {
		return fmt.Errorf("model: upcycle: %s has no output.weight (tied embeddings are not supported)", src.Path)
	}
	if cfg.HasRopeFreq || cfg.RopeScale != 1 || cfg.RopeDim != cfg.HeadDim || cfg.VHeadDim != cfg.HeadDim {
		return fmt.Errorf("model: upcycle: %s has rope scaling or partial rotation, which are not supported", src.Path)
	}
	d0, f0, hd := cfg.Dim, cfg.FFN, cfg.HeadDim
	if u.Dim < d0 || u.FFN < f0 || u.Dim > 1<<14 || u.FFN > 1<<16 {
		return fmt.Errorf("model: upcycle: dim %d and FFN %d, want at least the source's %d and %d (at most 16384 and 65536)", u.Dim, u.FFN, d0, f0)
	}
	if u.Experts < 0 || u.Experts > 256 || u.Experts > 0 && (u.ExpertsUsed < 1 || u.ExpertsUsed > u.Experts) {
		return fmt.Errorf("model: upcycle: %d experts, %d used", u.Experts, u.ExpertsUsed)
	}
	if u.Perturb < 0 || u.Perturb > 10 || u.RouterScale < 0 || u.RouterScale > 100 {
		return fmt.Errorf("model: upcycle: perturbation %g, router scale %g (want 0..10, 0..100)", u.Perturb, u.RouterScale)
	}
	switch {
	case u.Arch == "llama":
	case u.Arch == "qwen2moe" || u.Arch == "deepseek2":
		if u.Experts == 0 {
			return fmt.Errorf("model: upcycle: %s needs experts", u.Arch)
		}
	default:
		return fmt.Errorf("model: upcycle: architecture %q (want llama, qwen2moe or deepseek2)", u.Arch)
	}
	vocab, err := VocabFrom(src)
	if err != nil {
		return err
	}
	eps := float64(cfg.Eps) * float64(d0) / float64(u.Dim)
	sh := Shape{Arch: u.Arch, Name: fmt.Sprintf("%s upcycled to %s", src.Path[strings.LastIndex(src.Path, "/")+1:], u.Arch),
		Dim: u.Dim, Layers: cfg.Layers, Heads: cfg.Heads, KVHeads: cfg.KVHeads, HeadDim: hd, FFN: u.FFN,
		Vocab: cfg.Vocab, Context: cfg.ContextLen, Eps: eps}
	if u.Experts > 0 {
		sh.Experts, sh.ExpertsUsed, sh.ExpertFFN = u.Experts, u.ExpertsUsed, u.FFN
	}
	switch u.Arch {
	case "qwen2moe":
		sh.SharedFFN, sh.HeadDim = u.FFN, 0
		if u.Dim%cfg.Heads != 0 || u.Dim/cfg.Heads%hd != 0 || u.Dim/cfg.Heads < hd {
			return fmt.Errorf("model: upcycle: qwen2moe's heads are dim/heads = %d/%d wide, which must be a multiple of the source's %d", u.Dim, cfg.Heads, hd)
		}
	case "deepseek2":
		sh.KVHeads, sh.HeadDim, sh.VHeadDim, sh.RopeDim = cfg.Heads, 2*hd, hd, hd
		sh.QLoraRank, sh.KVLoraRank = d0, d0
		sh.SharedExperts, sh.LeadingDense, sh.Sigmoid, sh.WeightsNorm, sh.WeightsScale = 1, 1, true, true, 2.5
		if cfg.Layers < 2 {
			return fmt.Errorf("model: upcycle: deepseek2 needs 2 layers or more (one leading dense), %s has %d", src.Path, cfg.Layers)
		}
	}
	up := &upcycler{src: upcycleSource{src, cfg}, u: u, cfg: cfg, sh: sh, normScale: math.Sqrt(float64(d0) / float64(u.Dim))}
	return writeShape(w, sh, gguf.F32, 0, &vocab, up.tensor)
}

type upcycler struct {
	src       upcycleSource
	u         Upcycle
	cfg       *Config
	sh        Shape
	normScale float64
}

// pad returns m (rows of cols) placed at the top left of a rows x cols matrix of zeros,
// flattened.
func pad(m [][]float64, cols, rows int) []float32 {
	out := make([]float32, cols*rows)
	for r, row := range m {
		for c, v := range row {
			out[r*cols+c] = float32(v)
		}
	}
	return out
}

// rng gives each tensor its own stream from the seed and its name, so that the values do not
// depend on the order of writing.
func (up *upcycler) rng(name string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(up.u.Seed, h))
}

func (up *upcycler) tensor(name string, n int) ([]float32, error) {
	c, u := up.cfg, up.u
	d0, hd := c.Dim, c.HeadDim
	layer := -1
	rest := name
	if strings.HasPrefix(name, "blk.") {
		i := strings.IndexByte(name[4:], '.')
		if i < 0 {
			return nil, fmt.Errorf("model: upcycle: tensor %s", name)
		}
		l, err := strconv.Atoi(name[4 : 4+i])
		if err != nil {
			return nil, fmt.Errorf("model: upcycle: tensor %s", name)
		}
		layer, rest = l, name[5+i:]
	}
	p := fmt.Sprintf("blk.%d.", layer)
	normW := func(tn string) ([]float32, error) {
		v, err := up.src.matrix(tn, d0, 1)
		if err != nil {
			return nil, err
		}
		out := make([]float32, u.Dim)
		for i, x := range v[0] {
			out[i] = float32(x * up.normScale)
		}
		return out, nil
	}
	ones := func(k int, v float64) []float32 {
		out := make([]float32, n)
		for i := 0; i < k; i++ {
			out[i] = float32(v)
		}
		return out
	}
	switch rest {
	case "token_embd.weight", "output.weight":
		m, err := up.src.matrix(rest, d0, c.Vocab)
		if err != nil {
			return nil, err
		}
		return pad(m, u.Dim, c.Vocab), nil
	case "output_norm.weight":
		return normW(rest)
	case "attn_norm.weight":
		if u.Arch == "deepseek2" {
			// folded into the matrices that read the latents
			return ones(d0, 1), nil
		}
		return normW(p + rest)
	case "ffn_norm.weight":
		return normW(p + rest)
	case "attn_q.weight", "attn_k.weight", "attn_v.weight":
		rows := c.Heads * hd
		if rest != "attn_q.weight" {
			rows = c.KVHeads * hd
		}
		m, err := up.src.matrix(p+rest, d0, rows)
		if err != nil {
			return nil, err
		}
		if u.Arch == "qwen2moe" {
			return up.qwenHeads(m, rest), nil
		}
		return pad(m, u.Dim, rows), nil
	case "attn_output.weight":
		m, err := up.src.matrix(p+rest, c.Heads*hd, d0)
		if err != nil {
			return nil, err
		}
		if u.Arch == "qwen2moe" {
			// value dimension r of head h is at h*wide+r
			wide := u.Dim / c.Heads
			out := make([]float32, n)
			for i, row := range m {
				for j, v := range row {
					out[i*c.Heads*wide+j/hd*wide+j%hd] = float32(v)
				}
			}
			return out, nil
		}
		return pad(m, c.Heads*hd, u.Dim), nil
	case "attn_q.bias", "attn_k.bias", "attn_v.bias":
		return make([]float32, n), nil
	case "ffn_gate_inp_shexp.weight":
		// small and random, not zero: llama.cpp c392e50 computes the sigmoid as silu(x)/x
		r := up.rng(name)
		out := make([]float32, n)
		for j := 0; j < d0; j++ {
			out[j] = float32(0.1 * r.NormFloat64() / math.Sqrt(float64(d0)))
		}
		return out, nil
	case "ffn_gate.weight", "ffn_up.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight":
		m, err := up.src.matrix(p+strings.Replace(rest, "_shexp", "", 1), d0, c.FFN)
		if err != nil {
			return nil, err
		}
		return pad(m, u.Dim, u.FFN), nil
	case "ffn_down.weight", "ffn_down_shexp.weight":
		m, err := up.src.matrix(p+"ffn_down.weight", c.FFN, d0)
		if err != nil {
			return nil, err
		}
		if rest == "ffn_down_shexp.weight" && u.Arch == "deepseek2" {
			scale(m, 0.5)
		}
		return pad(m, u.FFN, u.Dim), nil
	case "ffn_gate_inp.weight":
		r := up.rng(name)
		out := make([]float32, n)
		for e := 0; e < u.Experts; e++ {
			for j := 0; j < d0; j++ {
				out[e*u.Dim+j] = float32(u.RouterScale * r.NormFloat64() / math.Sqrt(float64(d0)))
			}
		}
		return out, nil
	case "exp_probs_b.bias":
		r := up.rng(name)
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.1 * r.NormFloat64())
		}
		return out, nil
	case "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight":
		return up.experts(name, p, rest)
	case "attn_q_a.weight", "attn_kv_a_mqa.weight":
		// the latent is the active dimensions of the normalised input (RMS 2 over them, with
		// attn_norm 1); kv_a_mqa's last rows are the rotary key of KV head 0
		out := make([]float32, n)
		for j := 0; j < d0; j++ {
			out[j*u.Dim+j] = 1
		}
		if rest == "attn_kv_a_mqa.weight" {
			k, err := up.keys(p)
			if err != nil {
				return nil, err
			}
			for r := 0; r < hd; r++ {
				for j := 0; j < d0; j++ {
					out[(d0+r)*u.Dim+j] = float32(k[r][j] / math.Sqrt(float64(u.Dim)/float64(d0)))
				}
			}
		}
		return out, nil
	case "attn_q_a_norm.weight", "attn_kv_a_norm.weight":
		return ones(d0, 1), nil
	case "attn_q_b.weight":
		return up.mlaQuery(p)
	case "attn_kv_b.weight":
		return up.mlaKV(p)
	}
	return nil, fmt.Errorf("model: upcycle: no rule for tensor %s", name)
}

// qwenHeads places the source's heads of attn_q, attn_k or attn_v (rows of the source dim)
// in qwen2moe's heads of u.Dim/heads values (llama.cpp c392e50 reads no key_length for it).
// llama files rotate adjacent pairs (2j, 2j+1) at frequency base^(-2j/hd); qwen2moe rotates
// (i, i+wide/2) at base^(-2i/wide), the same at i = j*wide/hd, where the pair goes. Queries
// are multiplied by sqrt(wide/hd), the ratio of the attention scales; values take the
// first hd dimensions of their head.
func (up *upcycler) qwenHeads(m [][]float64, rest string) []float32 {
	hd, dim := up.cfg.HeadDim, up.u.Dim
	wide := dim / up.cfg.Heads
	heads := len(m) / hd
	out := make([]float32, heads*wide*dim)
	put := func(dst int, row []float64, mul float64) {
		for j, v := range row {
			out[dst*dim+j] = float32(v * mul)
		}
	}
	mul := 1.0
	if rest == "attn_q.weight" {
		mul = math.Sqrt(float64(wide) / float64(hd))
	}
	for h := 0; h < heads; h++ {
		for j := 0; j < hd/2; j++ {
			if rest == "attn_v.weight" {
				put(h*wide+2*j, m[h*hd+2*j], 1)
				put(h*wide+2*j+1, m[h*hd+2*j+1], 1)
				continue
			}
			i := j * wide / hd
			put(h*wide+i, m[h*hd+2*j], mul)
			put(h*wide+i+wide/2, m[h*hd+2*j+1], mul)
		}
	}
	return out
}

func scale(m [][]float64, s float64) {
	for _, row := range m {
		for j := range row {
			row[j] *= s
		}
	}
}

// folded returns the source's matrix tn of layer prefix p (rows of the source dim) with the
// layer's attn_norm weights folded into its columns.
func (up *upcycler) folded(p, tn string, rows int) ([][]float64, error) {
	m, err := up.src.matrix(p+tn, up.cfg.Dim, rows)
	if err != nil {
		return nil, err
	}
	w, err := up.src.matrix(p+"attn_norm.weight", up.cfg.Dim, 1)
	if err != nil {
		return nil, err
	}
	for _, row := range m {
		for j := range row {
			row[j] *= w[0][j]
		}
	}
	return m, nil
}

// keys is the source's attn_k of layer prefix p with attn_norm folded in.
func (up *upcycler) keys(p string) ([][]float64, error) {
	return up.folded(p, "attn_k.weight", up.cfg.KVHeads*up.cfg.HeadDim)
}

// mlaQuery is attn_q_b: per head hd non-rotary then hd rotary rows, the trained query in the
// rotary part for the heads of KV head 0, in the non-rotary part for the others, scaled by
// sqrt(2) for the key length 2*hd of the attention scale.
func (up *upcycler) mlaQuery(p string) ([]float32, error) {
	c := up.cfg
	hd, d0 := c.HeadDim, c.Dim
	q, err := up.folded(p, "attn_q.weight", c.Heads*hd)
	if err != nil {
		return nil, err
	}
	group := c.Heads / c.KVHeads
	out := make([]float32, d0*c.Heads*2*hd)
	for h := 0; h < c.Heads; h++ {
		off := h * 2 * hd
		if h/group == 0 {
			off += hd
		}
		for r := 0; r < hd; r++ {
			for j := 0; j < d0; j++ {
				out[(off+r)*d0+j] = float32(q[h*hd+r][j] * math.Sqrt2)
			}
		}
	}
	return out, nil
}

// mlaKV is attn_kv_b: per head hd non-rotary key rows (its KV head's key, zero for KV head 0,
// whose key is the rotary one) then hd value rows.
func (up *upcycler) mlaKV(p string) ([]float32, error) {
	c := up.cfg
	hd, d0 := c.HeadDim, c.Dim
	k, err := up.keys(p)
	if err != nil {
		return nil, err
	}
	v, err := up.folded(p, "attn_v.weight", c.KVHeads*hd)
	if err != nil {
		return nil, err
	}
	group := c.Heads / c.KVHeads
	out := make([]float32, d0*c.Heads*2*hd)
	for h := 0; h < c.Heads; h++ {
		g := h / group
		for r := 0; r < hd; r++ {
			for j := 0; j < d0; j++ {
				if g != 0 {
					out[(h*2*hd+r)*d0+j] = float32(k[g*hd+r][j])
				}
				out[(h*2*hd+hd+r)*d0+j] = float32(v[g*hd+r][j])
			}
		}
	}
	return out, nil
}

// experts is a 3-D expert tensor: the dense matrix plus each expert's perturbation, down
// scaled so that the family's routing weights add up to the dense FFN (see WriteUpcycled).
func (up *upcycler) experts(name, p, rest string) ([]float32, error) {
	c, u := up.cfg, up.u
	cols, rows := c.Dim, c.FFN
	wc, wr := u.Dim, u.FFN
	src := strings.Replace(rest, "_exps", "", 1)
	if src == "ffn_down.weight" {
		cols, rows, wc, wr = c.FFN, c.Dim, u.FFN, u.Dim
	}
	m, err := up.src.matrix(p+src, cols, rows)
	if err != nil {
		return nil, err
	}
	var ss float64
	for _, row := range m {
		for _, v := range row {
			ss += v * v
		}
	}
	sd := u.Perturb * math.Sqrt(ss/float64(cols*rows))
	mul := 1.0
	if src == "ffn_down.weight" {
		switch u.Arch {
		case "qwen2moe":
			mul = 0.5
		case "deepseek2":
			mul = 0.5 / up.sh.WeightsScale
		}
	}
	r := up.rng(name)
	out := make([]float32, wc*wr*u.Experts)
	for e := 0; e < u.Experts; e++ {
		base := e * wc * wr
		for i, row := range m {
			for j, v := range row {
				out[base+i*wc+j] = float32(mul * (v + sd*r.NormFloat64()))
			}
		}
	}
	return out, nil
}
