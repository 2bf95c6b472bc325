package model

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// Shape is the size of a synthetic model.
type Shape struct {
	Arch    string // a registered architecture (Architectures)
	Name    string // general.name (empty: "synthetic ARCH TYPE")
	Dim     int
	Layers  int
	Heads   int
	KVHeads int
	HeadDim int // 0: Dim/Heads
	FFN     int
	Vocab   int
	Context int
	// Mixture of experts: routed experts, experts per token, their hidden size, and the
	// shared expert's hidden size (qwen2moe).
	Experts, ExpertsUsed, ExpertFFN, SharedFFN int
	// deepseek2: leading dense layers, shared experts (SharedFFN = SharedExperts*ExpertFFN),
	// sigmoid scores with a score bias, the weights' normalisation and scale, latent
	// attention ranks and head shapes (HeadDim is the key head: RopeDim rotary values at its
	// end), YaRN (factor, original context, log multiplier; factor 0: none).
	LeadingDense, SharedExperts int
	Sigmoid, WeightsNorm        bool
	WeightsScale                float64
	QLoraRank, KVLoraRank       int
	RopeDim, VHeadDim           int
	YarnFactor, YarnLogMul      float64
	YarnOrigContext             int
	Eps                         float64 // RMSNorm epsilon (0: 1e-5)
}

// Shapes are named benchmark shapes. 349M is the Llama shape of BENCHMARKS.md's llm
// figures.
var Shapes = map[string]Shape{
	"349M": {Arch: "llama", Dim: 1024, Layers: 24, Heads: 16, KVHeads: 8, FFN: 2816, Vocab: 32000, Context: 2048},
	"1B":   {Arch: "llama", Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, FFN: 8192, Vocab: 32000, Context: 2048},
	"tiny": {Arch: "llama", Dim: 256, Layers: 2, Heads: 8, KVHeads: 4, FFN: 512, Vocab: 512, Context: 256},
	// Mixtral-like: 8 experts, top 2.
	"mixtral-tiny": {Arch: "llama", Dim: 256, Layers: 2, Heads: 8, KVHeads: 4, FFN: 256, Vocab: 512, Context: 256, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256},
	"mixtral-1B":   {Arch: "llama", Dim: 1024, Layers: 16, Heads: 16, KVHeads: 8, FFN: 2048, Vocab: 32000, Context: 2048, Experts: 8, ExpertsUsed: 2, ExpertFFN: 2048},
	// Qwen1.5-MoE-like: 8 routed experts, top 2, a shared expert four experts wide.
	"qwen2moe-tiny": {Arch: "qwen2moe", Dim: 256, Layers: 2, Heads: 8, KVHeads: 4, FFN: 256, Vocab: 512, Context: 256, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256, SharedFFN: 512},
	"qwen2moe-1B":   {Arch: "qwen2moe", Dim: 1024, Layers: 16, Heads: 16, KVHeads: 8, FFN: 1536, Vocab: 32000, Context: 2048, Experts: 8, ExpertsUsed: 2, ExpertFFN: 1536, SharedFFN: 3072},
	// Qwen3-MoE-like: 8 experts, top 2, QK norms.
	"qwen3moe-tiny": {Arch: "qwen3moe", Dim: 256, Layers: 2, Heads: 8, KVHeads: 4, FFN: 256, Vocab: 512, Context: 256, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256},
	"qwen3moe-1B":   {Arch: "qwen3moe", Dim: 1024, Layers: 16, Heads: 16, KVHeads: 8, FFN: 2048, Vocab: 32000, Context: 2048, Experts: 8, ExpertsUsed: 2, ExpertFFN: 2048},
	// DeepSeek-V3-like: latent attention with YaRN, one leading dense layer, 8 routed
	// experts top-2 with sigmoid scores and a score bias, one shared expert.
	"deepseek2-tiny": {Arch: "deepseek2", Dim: 256, Layers: 3, Heads: 8, KVHeads: 8, HeadDim: 48, VHeadDim: 32, RopeDim: 16,
		QLoraRank: 96, KVLoraRank: 128, FFN: 512, Vocab: 512, Context: 256, Experts: 8, ExpertsUsed: 2, ExpertFFN: 256,
		SharedExperts: 1, LeadingDense: 1, Sigmoid: true, WeightsNorm: true, WeightsScale: 2.5,
		YarnFactor: 4, YarnOrigContext: 64, YarnLogMul: 0.1},
	"deepseek2-1B": {Arch: "deepseek2", Dim: 1024, Layers: 16, Heads: 16, KVHeads: 16, HeadDim: 192, VHeadDim: 128, RopeDim: 64,
		QLoraRank: 512, KVLoraRank: 256, FFN: 4096, Vocab: 32000, Context: 4096, Experts: 8, ExpertsUsed: 2, ExpertFFN: 1536,
		SharedExperts: 1, LeadingDense: 1, Sigmoid: true, WeightsNorm: true, WeightsScale: 2.5,
		YarnFactor: 4, YarnOrigContext: 1024, YarnLogMul: 0.1},
}

// ShapeNames lists Shapes' keys.
func ShapeNames() string {
	var s []string
	for k := range Shapes {
		s = append(s, k)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// Params returns the number of weights of s (all experts).
func (s Shape) Params() int64 {
	hd := s.headDim()
	d := int64(s.Dim)
	attn := d * int64(2*s.Heads*hd+2*s.KVHeads*hd)
	if s.KVLoraRank > 0 {
		q := d * int64(s.Heads*hd)
		if s.QLoraRank > 0 {
			q = d*int64(s.QLoraRank) + int64(s.QLoraRank*s.Heads*hd)
		}
		attn = q + d*int64(s.KVLoraRank+s.RopeDim) + int64(s.KVLoraRank*s.Heads*(hd-s.RopeDim+s.VHeadDim)) + int64(s.Heads*s.VHeadDim)*d
	}
	dense := 3 * d * int64(s.FFN)
	mlp := dense
	if s.Experts > 0 {
		mlp = 3*d*int64(s.ExpertFFN)*int64(s.Experts) + d*int64(s.Experts) + 3*d*int64(s.SharedExpertFFN())
	}
	return int64(s.Layers)*(attn+2*d) + int64(s.LeadingDense)*dense + int64(s.Layers-s.LeadingDense)*mlp + 2*int64(s.Vocab)*d + d
}

// SharedExpertFFN is the hidden size of the shared expert(s) (0: none).
func (s Shape) SharedExpertFFN() int {
	if s.SharedExperts > 0 {
		return s.SharedExperts * s.ExpertFFN
	}
	return s.SharedFFN
}

// ActiveParams returns the number of weights one token uses (its ExpertsUsed experts).
func (s Shape) ActiveParams() int64 {
	if s.Experts == 0 {
		return s.Params()
	}
	a := s
	a.Experts = s.ExpertsUsed
	return a.Params()
}

func (s Shape) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Dim / s.Heads
}

// Vocabulary is the tokenizer metadata copied into a synthetic model.
type Vocabulary struct {
	Model  string
	Tokens []string
	Scores []float32
	Types  []int32
}

// SyntheticVocab is a SentencePiece-style vocabulary of n pieces: <unk>, <s>, </s>, the 256
// byte tokens, then made-up pieces, so llama.cpp and our tokenizer can load the file.
func SyntheticVocab(n int) Vocabulary {
	v := Vocabulary{Model: "llama", Tokens: make([]string, n), Scores: make([]float32, n), Types: make([]int32, n)}
	for i := 0; i < n; i++ {
		switch {
		case i == 0:
			v.Tokens[i], v.Types[i] = "<unk>", 2
		case i <= 2:
			v.Tokens[i], v.Types[i] = []string{"", "<s>", "</s>"}[i], 3
		case i < 3+256:
			v.Tokens[i], v.Types[i] = fmt.Sprintf("<0x%02X>", i-3), 6
		default:
			v.Tokens[i], v.Types[i] = fmt.Sprintf("▁w%d", i), 1
			v.Scores[i] = -float32(i)
		}
	}
	return v
}

// VocabFrom reads the tokenizer arrays of a GGUF file.
func VocabFrom(f *gguf.File) (Vocabulary, error) {
	var v Vocabulary
	var err error
	if v.Model, err = f.String("tokenizer.ggml.model"); err != nil {
		return v, err
	}
	if v.Tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return v, err
	}
	if v.Scores, err = f.Float32s("tokenizer.ggml.scores"); err != nil {
		return v, err
	}
	if v.Types, err = f.Int32s("tokenizer.ggml.token_type"); err != nil {
		return v, err
	}
	return v, nil
}

// WriteSynthetic writes a model of shape s with random weights of type typ (norms F32) to w:
// normal weights scaled by 1/sqrt(fan-in) and quantized with the reference quantizers, or, for
// Q4_K, Q5_K and Q6_K, which have no quantizer here, random blocks with small scales. The same seed
// gives the same file. A vocab with len(Tokens) == s.Vocab is embedded (nil: SyntheticVocab).
func WriteSynthetic(w io.Writer, s Shape, typ gguf.Type, seed uint64, vocab *Vocabulary) error {
	return writeShape(w, s, typ, seed, vocab, nil)
}

// writeShape writes the file of WriteSynthetic; a non-nil fill gives every tensor's values
// (in ggml's order, the first dimension fastest) instead of random ones, stored as F32.
func writeShape(w io.Writer, s Shape, typ gguf.Type, seed uint64, vocab *Vocabulary, fill func(name string, n int) ([]float32, error)) error {
	hd := s.headDim()
	if fill != nil && typ != gguf.F32 {
		return fmt.Errorf("model: given weights are written as F32, not %s", typ)
	}
	arch, ok := registry[s.Arch]
	if !ok {
		return fmt.Errorf("model: unsupported architecture %q (supported: %s)", s.Arch, strings.Join(Architectures(), ", "))
	}
	cfg := Config{Arch: s.Arch, Layers: s.Layers, FFN: s.FFN, Experts: s.Experts, ExpertsUsed: s.ExpertsUsed,
		ExpertFFN: s.ExpertFFN, SharedFFN: s.SharedExpertFFN(), LeadingDense: s.LeadingDense, ExpertSigmoid: s.Sigmoid,
		ExpertWeightsNorm: s.WeightsNorm, ExpertWeightsScale: s.WeightsScale, arch: arch}
	if arch.MLA != (s.KVLoraRank > 0) || s.KVLoraRank > 0 && (s.RopeDim <= 0 || s.RopeDim >= hd || s.VHeadDim <= 0 || s.KVHeads != s.Heads) {
		return fmt.Errorf("model: %s with latent rank %d, rope dimension %d, value heads %d", s.Arch, s.KVLoraRank, s.RopeDim, s.VHeadDim)
	}
	rdim, vdim := hd, hd
	if s.KVLoraRank > 0 {
		rdim, vdim = s.RopeDim, s.VHeadDim
	}
	if s.Experts < 0 || s.Experts > 0 && (s.ExpertsUsed < 1 || s.ExpertsUsed > s.Experts || s.ExpertFFN <= 0) {
		return fmt.Errorf("model: %d experts, %d used, hidden size %d", s.Experts, s.ExpertsUsed, s.ExpertFFN)
	}
	if s.Heads <= 0 || s.KVHeads <= 0 || s.Heads%s.KVHeads != 0 || hd%2 != 0 {
		return fmt.Errorf("model: bad shape %+v", s)
	}
	if !quant.Supported(typ) {
		return fmt.Errorf("model: no kernels for %s", typ)
	}
	if vocab == nil {
		v := SyntheticVocab(s.Vocab)
		vocab = &v
	}
	if len(vocab.Tokens) != s.Vocab {
		return fmt.Errorf("model: vocabulary has %d tokens, shape needs %d", len(vocab.Tokens), s.Vocab)
	}
	gw := gguf.NewWriter()
	a := s.Arch
	ftype := map[gguf.Type]uint32{gguf.F32: 0, gguf.F16: 1, gguf.Q4_0: 2, gguf.Q4_1: 3, gguf.Q8_0: 7, gguf.Q5_0: 8,
		gguf.Q5_1: 9, gguf.Q2_K: 10, gguf.Q3_K: 11, gguf.Q4_K: 15, gguf.Q5_K: 17, gguf.Q6_K: 18, gguf.IQ4_NL: 25,
		gguf.IQ4_XS: 30, gguf.BF16: 32}[typ]
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", a}, {"general.name", cmp.Or(s.Name, fmt.Sprintf("synthetic %s %s", a, typ))},
		{"general.file_type", ftype}, {"general.quantization_version", uint32(2)},
		{a + ".context_length", uint32(s.Context)}, {a + ".embedding_length", uint32(s.Dim)},
		{a + ".block_count", uint32(s.Layers)}, {a + ".feed_forward_length", uint32(s.FFN)},
		{a + ".attention.head_count", uint32(s.Heads)}, {a + ".attention.head_count_kv", uint32(s.KVHeads)},
		{a + ".attention.key_length", uint32(hd)}, {a + ".attention.value_length", uint32(vdim)},
		{a + ".rope.dimension_count", uint32(rdim)}, {a + ".rope.freq_base", float32(10000)},
		{a + ".attention.layer_norm_rms_epsilon", float32(cmp.Or(s.Eps, 1e-5))},
		{"tokenizer.ggml.model", vocab.Model}, {"tokenizer.ggml.tokens", vocab.Tokens},
		{"tokenizer.ggml.scores", vocab.Scores}, {"tokenizer.ggml.token_type", vocab.Types},
		{"tokenizer.ggml.bos_token_id", uint32(1)}, {"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
	} {
		if err := gw.Set(kv.k, kv.v); err != nil {
			return err
		}
	}
	if s.Experts > 0 {
		for _, kv := range []struct {
			k string
			v uint32
		}{{".expert_count", uint32(s.Experts)}, {".expert_used_count", uint32(s.ExpertsUsed)},
			{".expert_feed_forward_length", uint32(s.ExpertFFN)}, {".expert_shared_feed_forward_length", uint32(s.SharedFFN)}} {
			if kv.v == 0 {
				continue
			}
			if err := gw.Set(a+kv.k, kv.v); err != nil {
				return err
			}
		}
	}
	if arch.MLA {
		gating := uint32(1)
		if s.Sigmoid {
			gating = 2
		}
		kvs := []struct {
			k string
			v any
		}{{".leading_dense_block_count", uint32(s.LeadingDense)}, {".attention.kv_lora_rank", uint32(s.KVLoraRank)},
			{".expert_shared_count", uint32(s.SharedExperts)}, {".expert_weights_scale", float32(s.WeightsScale)},
			{".expert_weights_norm", s.WeightsNorm}, {".expert_gating_func", gating}}
		if s.QLoraRank > 0 {
			kvs = append(kvs, struct {
				k string
				v any
			}{".attention.q_lora_rank", uint32(s.QLoraRank)})
		}
		if s.YarnFactor == 0 {
			// llama.cpp c392e50 requires the key of every deepseek2 file; with no scaling
			// its multiplier of log(1/freq_scale) = 0 changes nothing
			kvs = append(kvs, struct {
				k string
				v any
			}{".rope.scaling.yarn_log_multiplier", float32(0)})
		}
		if s.YarnFactor > 0 {
			kvs = append(kvs, []struct {
				k string
				v any
			}{{".rope.scaling.type", "yarn"}, {".rope.scaling.factor", float32(s.YarnFactor)},
				{".rope.scaling.original_context_length", uint32(s.YarnOrigContext)},
				{".rope.scaling.yarn_log_multiplier", float32(s.YarnLogMul)}}...)
		}
		for _, kv := range kvs {
			if err := gw.Set(a+kv.k, kv.v); err != nil {
				return err
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6c6d))
	// Each tensor gets its own seed so that writing stays streaming and deterministic.
	next := func() uint64 { return rng.Uint64() }
	given := func(name string, dims ...int64) error {
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		v, err := fill(name, n)
		if err != nil {
			return err
		}
		if len(v) != n {
			return fmt.Errorf("model: %d values for %s, want %d", len(v), name, n)
		}
		b := make([]byte, 4*n)
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return gw.AddTensor(name, gguf.F32, dims, b)
	}
	norm := func(name string, n int, mean float64) error {
		if fill != nil {
			return given(name, int64(n))
		}
		r := rand.New(rand.NewPCG(next(), 1))
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(mean+0.1*r.NormFloat64())))
		}
		return gw.AddTensor(name, gguf.F32, []int64{int64(n)}, b)
	}
	mat := func(name string, cols, rows int, t gguf.Type) error {
		if fill != nil {
			return given(name, int64(cols), int64(rows))
		}
		sd := next()
		return gw.AddTensorFunc(name, t, []int64{int64(cols), int64(rows)}, func(out io.Writer) error {
			return writeRandomMatrix(out, t, cols, rows, sd)
		})
	}
	// A stack of n matrices (the experts' 3-D tensors), each scaled by 1/sqrt(cols).
	mat3 := func(name string, cols, rows, n int, t gguf.Type) error {
		if fill != nil {
			return given(name, int64(cols), int64(rows), int64(n))
		}
		sd := next()
		return gw.AddTensorFunc(name, t, []int64{int64(cols), int64(rows), int64(n)}, func(out io.Writer) error {
			return writeRandomMatrix(out, t, cols, rows*n, sd)
		})
	}
	if err := mat("token_embd.weight", s.Dim, s.Vocab, typ); err != nil {
		return err
	}
	if err := norm("output_norm.weight", s.Dim, 1); err != nil {
		return err
	}
	if err := mat("output.weight", s.Dim, s.Vocab, typ); err != nil {
		return err
	}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		b := cfg.Block(l)
		var steps []error
		if b.MLA {
			steps = append(steps, norm(p+"attn_norm.weight", s.Dim, 1))
			if s.QLoraRank > 0 {
				steps = append(steps, mat(p+"attn_q_a.weight", s.Dim, s.QLoraRank, typ), norm(p+"attn_q_a_norm.weight", s.QLoraRank, 1),
					mat(p+"attn_q_b.weight", s.QLoraRank, s.Heads*hd, typ))
			} else {
				steps = append(steps, mat(p+"attn_q.weight", s.Dim, s.Heads*hd, typ))
			}
			steps = append(steps, mat(p+"attn_kv_a_mqa.weight", s.Dim, s.KVLoraRank+s.RopeDim, typ),
				norm(p+"attn_kv_a_norm.weight", s.KVLoraRank, 1),
				mat(p+"attn_kv_b.weight", s.KVLoraRank, s.Heads*(hd-s.RopeDim+s.VHeadDim), typ),
				mat(p+"attn_output.weight", s.Heads*s.VHeadDim, s.Dim, typ),
				norm(p+"ffn_norm.weight", s.Dim, 1))
		} else {
			steps = []error{
				norm(p+"attn_norm.weight", s.Dim, 1),
				mat(p+"attn_q.weight", s.Dim, s.Heads*hd, typ),
				mat(p+"attn_k.weight", s.Dim, s.KVHeads*hd, typ),
				mat(p+"attn_v.weight", s.Dim, s.KVHeads*hd, typ),
				mat(p+"attn_output.weight", s.Heads*hd, s.Dim, typ),
				norm(p+"ffn_norm.weight", s.Dim, 1),
			}
		}
		if b.MoE == nil {
			steps = append(steps, mat(p+"ffn_gate.weight", s.Dim, s.FFN, typ),
				mat(p+"ffn_up.weight", s.Dim, s.FFN, typ),
				mat(p+"ffn_down.weight", s.FFN, s.Dim, typ))
		} else {
			// The router stays F32, as llama-quantize leaves it.
			steps = append(steps, mat(p+"ffn_gate_inp.weight", s.Dim, s.Experts, gguf.F32),
				mat3(p+"ffn_gate_exps.weight", s.Dim, s.ExpertFFN, s.Experts, typ),
				mat3(p+"ffn_up_exps.weight", s.Dim, s.ExpertFFN, s.Experts, typ),
				mat3(p+"ffn_down_exps.weight", s.ExpertFFN, s.Dim, s.Experts, typ))
			if b.MoE.Sigmoid {
				steps = append(steps, norm(p+"exp_probs_b.bias", s.Experts, 0))
			}
			if b.MoE.SharedGate {
				steps = append(steps, norm(p+"ffn_gate_inp_shexp.weight", s.Dim, 0))
			}
			if sf := s.SharedExpertFFN(); b.MoE.SharedGate || b.MoE.Shared {
				steps = append(steps, mat(p+"ffn_gate_shexp.weight", s.Dim, sf, typ),
					mat(p+"ffn_up_shexp.weight", s.Dim, sf, typ),
					mat(p+"ffn_down_shexp.weight", sf, s.Dim, typ))
			}
		}
		if b.AttnBias {
			steps = append(steps, norm(p+"attn_q.bias", s.Heads*hd, 0), norm(p+"attn_k.bias", s.KVHeads*hd, 0), norm(p+"attn_v.bias", s.KVHeads*hd, 0))
		}
		if b.QKNorm {
			steps = append(steps, norm(p+"attn_q_norm.weight", hd, 1), norm(p+"attn_k_norm.weight", hd, 1))
		}
		for _, err := range steps {
			if err != nil {
				return err
			}
		}
	}
	_, err := gw.WriteTo(w)
	return err
}

func writeRandomMatrix(out io.Writer, t gguf.Type, cols, rows int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 2))
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		return err
	}
	buf := make([]byte, rb)
	x := make([]float32, cols)
	scale := 1 / math.Sqrt(float64(cols))
	for i := 0; i < rows; i++ {
		switch t {
		case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
			randomKBlocks(r, t, buf, scale)
		default:
			for j := range x {
				x[j] = float32(scale * r.NormFloat64())
			}
			if err := quant.Quantize(t, x, buf); err != nil {
				return err
			}
		}
		if _, err := out.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// randomKBlocks fills K-quant blocks with random quants and scales chosen so that the values
// have a standard deviation of roughly scale (centred for Q4_K/Q5_K by their mins).
func randomKBlocks(r *rand.Rand, t gguf.Type, b []byte, scale float64) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	bs := t.TypeSize()
	le := binary.LittleEndian
	for off := 0; off < len(b); off += bs {
		switch t {
		case gguf.Q4_K, gguf.Q5_K:
			// Sub-block scales and mins are 6 bits; set all eight of each to 32, so that
			// x = d*32*q - dmin*32: bytes 0..7 carry 32 in their low 6 bits (scales and mins
			// of sub-blocks 0..3) and the top bits 0b10 (the high bits of 4..7, whose low
			// nibbles in bytes 8..11 are 0).
			for j := 0; j < 8; j++ {
				b[off+4+j] = 0xA0
			}
			for j := 8; j < 12; j++ {
				b[off+4+j] = 0
			}
			levels := 16.0
			if t == gguf.Q5_K {
				levels = 32
			}
			d := scale * math.Sqrt(12) / levels / 32
			le.PutUint16(b[off:], quant.F32ToF16(float32(d)))
			le.PutUint16(b[off+2:], quant.F32ToF16(float32(d*(levels-1)/2)))
		case gguf.Q6_K:
			for j := 0; j < 16; j++ {
				b[off+192+j] = 16
			}
			d := scale * math.Sqrt(12) / 64 / 16
			le.PutUint16(b[off+208:], quant.F32ToF16(float32(d)))
		}
	}
}
