package model

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// RopeStyle says which elements RoPE rotates together.
type RopeStyle int

const (
	// RopeNorm rotates adjacent pairs (x[2i], x[2i+1]): llama and mistral files, whose
	// converter permutes the Q and K rows into this order.
	RopeNorm RopeStyle = iota
	// RopeNeox rotates (x[i], x[i+d/2]): qwen2 and qwen3.
	RopeNeox
)

// Config is the shape and hyper-parameters of a model, read from GGUF metadata. What differs
// between architectures beyond these numbers is the Arch's Block.
type Config struct {
	Arch        string
	Dim         int // embedding length
	Layers      int
	Heads       int // query heads
	KVHeads     int
	HeadDim     int
	FFN         int // feed-forward hidden size of the dense MLP
	Vocab       int
	ContextLen  int // training context length (metadata)
	Eps         float32
	RopeBase    float64
	RopeDim     int
	RopeStyle   RopeStyle
	RopeScale   float64 // linear position scaling factor (1: none)
	TiedEmbed   bool    // no output.weight: the classifier is token_embd
	HasRopeFreq bool    // rope_freqs.weight divides the frequencies (llama3 scaling)
	VHeadDim    int     // value head dimension (HeadDim except with multi-head latent attention)
	// YaRN (Yarn set; RopeScale is its factor): the rotation angles of the dimensions below
	// YarnLow keep their trained values, those above YarnHigh are divided by RopeScale, a
	// ramp blends between; AttnScale multiplies the attention scores (0: 1/sqrt(HeadDim)).
	Yarn              bool
	YarnLow, YarnHigh float64
	AttnScale         float64

	// Mixture of experts (Experts == 0: a dense model).
	Experts      int // routed experts per layer
	ExpertsUsed  int // experts each token runs
	ExpertFFN    int // hidden size of each routed expert
	SharedFFN    int // hidden size of the shared expert (0: none)
	LeadingDense int // layers before the first mixture-of-experts layer that have a dense MLP
	// deepseek2's routing: sigmoid scores instead of the softmax, the chosen weights
	// renormalised, then multiplied by ExpertWeightsScale.
	ExpertSigmoid      bool
	ExpertWeightsNorm  bool
	ExpertWeightsScale float64

	// Multi-head latent attention (KVLoraRank > 0): queries through a rank-QLoraRank bottleneck
	// (0: one matrix), keys and values from a cached latent of KVLoraRank plus RopeDim values.
	QLoraRank, KVLoraRank int

	arch *Arch
}

// Block returns the block of layer i.
func (c *Config) Block(i int) Block { return c.arch.Block(c, i) }

// ReadConfig reads and checks the model description of f without touching tensor data.
func ReadConfig(f *gguf.File) (*Config, error) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return nil, err
	}
	a, err := lookupArch(f.Path, arch)
	if err != nil {
		return nil, err
	}
	c := &Config{Arch: arch, RopeStyle: a.Rope, RopeScale: 1, arch: a}
	keys := &Keys{f: f, arch: arch}
	geti := func(key string, dst *int, def int) (err error) {
		*dst, err = keys.Int(key, def)
		return err
	}
	for _, p := range []struct {
		key string
		dst *int
		def int
	}{{"embedding_length", &c.Dim, -1}, {"block_count", &c.Layers, -1}, {"attention.head_count", &c.Heads, -1},
		{"feed_forward_length", &c.FFN, -1}, {"context_length", &c.ContextLen, 2048}} {
		if err := geti(p.key, p.dst, p.def); err != nil {
			return nil, err
		}
	}
	if err := geti("attention.head_count_kv", &c.KVHeads, c.Heads); err != nil {
		return nil, err
	}
	if c.Dim <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.FFN <= 0 || c.KVHeads <= 0 {
		return nil, fmt.Errorf("%s: bad shape: dim %d, layers %d, heads %d, kv heads %d, ffn %d", f.Path, c.Dim, c.Layers, c.Heads, c.KVHeads, c.FFN)
	}
	if c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("%s: %d query heads are not a multiple of %d KV heads", f.Path, c.Heads, c.KVHeads)
	}
	def := -1
	if c.Dim%c.Heads == 0 {
		def = c.Dim / c.Heads
	}
	if err := geti("attention.key_length", &c.HeadDim, def); err != nil {
		return nil, err
	}
	if err := geti("attention.value_length", &c.VHeadDim, c.HeadDim); err != nil {
		return nil, err
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.VHeadDim <= 0 || (!a.MLA && c.VHeadDim != c.HeadDim) {
		return nil, fmt.Errorf("%s: head dimension %d (value length %d) unsupported: it must be even and equal for keys and values", f.Path, c.HeadDim, c.VHeadDim)
	}
	if err := geti("rope.dimension_count", &c.RopeDim, c.HeadDim); err != nil {
		return nil, err
	}
	if c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0 {
		return nil, fmt.Errorf("%s: rope dimension %d with head dimension %d", f.Path, c.RopeDim, c.HeadDim)
	}
	c.RopeBase = 10000
	if v, err := f.Float(arch + ".rope.freq_base"); err == nil {
		c.RopeBase = v
	} else if !errors.Is(err, gguf.ErrNotFound) {
		return nil, err
	}
	if st, err := f.String(arch + ".rope.scaling.type"); err == nil {
		switch st {
		case "none":
		case "linear":
			fac, err := f.Float(arch + ".rope.scaling.factor")
			if err != nil {
				return nil, err
			}
			if fac <= 0 {
				return nil, fmt.Errorf("%s: rope scaling factor %g", f.Path, fac)
			}
			c.RopeScale = fac
		case "yarn":
			if !a.MLA {
				return nil, fmt.Errorf("%s: rope scaling yarn is supported here for deepseek2 only", f.Path)
			}
			fac, err := f.Float(arch + ".rope.scaling.factor")
			if err != nil {
				return nil, err
			}
			if fac < 1 || fac > 1e6 {
				return nil, fmt.Errorf("%s: rope scaling factor %g", f.Path, fac)
			}
			c.RopeScale, c.Yarn = fac, true
		default:
			return nil, fmt.Errorf("%s: rope scaling %q is not supported (none, linear, yarn for deepseek2; llama3 scaling comes as rope_freqs.weight)", f.Path, st)
		}
	}
	c.Eps = 1e-5
	if v, err := f.Float(arch + ".attention.layer_norm_rms_epsilon"); err == nil {
		c.Eps = float32(v)
	} else if !errors.Is(err, gguf.ErrNotFound) {
		return nil, err
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("%s: tensor token_embd.weight missing", f.Path)
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != int64(c.Dim) || emb.Dims[1] <= 0 || emb.Dims[1] > 1<<24 {
		return nil, fmt.Errorf("%s: token_embd.weight has shape %v, want [%d, vocab]", f.Path, emb.Dims, c.Dim)
	}
	c.Vocab = int(emb.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.TiedEmbed = !hasOut
	_, c.HasRopeFreq = f.Tensor("rope_freqs.weight")
	if err := a.Hparams(keys, c); err != nil {
		return nil, err
	}
	if c.Experts > 0 && (c.ExpertFFN <= 0 || c.SharedFFN < 0) {
		return nil, fmt.Errorf("%s: expert hidden size %d, shared expert %d", f.Path, c.ExpertFFN, c.SharedFFN)
	}
	return c, nil
}

// ValidDegrees lists the tensor-parallel degrees up to max that c supports: those that divide
// the number of query heads (KV heads are sharded when the degree divides their count and
// partly replicated otherwise).
func (c *Config) ValidDegrees(max int) []int {
	var d []int
	for p := 1; p <= max; p++ {
		if c.Heads%p == 0 {
			d = append(d, p)
		}
	}
	return d
}

// CheckDegree reports whether the model can be split over p ranks.
func (c *Config) CheckDegree(p int) error {
	if p < 1 || c.Heads%p != 0 {
		return fmt.Errorf("tensor-parallel degree %d does not divide the %d query heads; degrees that work: %v", p, c.Heads, c.ValidDegrees(c.Heads))
	}
	return nil
}
