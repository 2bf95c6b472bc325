package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// An Arch is one architecture family as GGUF files name it (general.architecture): the
// metadata keys of its own and the block each layer runs. Each family is one file
// (arch_*.go) that registers itself; the common shape keys (embedding length, heads, RoPE,
// epsilon) are read for every family by ReadConfig.
type Arch struct {
	Name string
	Rope RopeStyle
	MLA  bool // multi-head latent attention (deepseek2): value heads may differ from key heads
	// Hparams reads the family's own keys (expert counts, ...) into c after the common ones,
	// and checks them.
	Hparams func(r *Keys, c *Config) error
	// Block returns the block of layer i of a model of configuration c.
	Block func(c *Config, i int) Block
}

// Block is what one transformer layer computes. Attention is always grouped-query attention
// with RoPE; the variants are its optional biases and QK norms. The feed-forward part is a
// dense SwiGLU MLP or a mixture of SwiGLU experts.
type Block struct {
	AttnBias bool // attn_{q,k,v}.bias added after the projections
	QKNorm   bool // attn_{q,k}_norm.weight: RMS norm of each query and key head before RoPE
	MLA      bool // multi-head latent attention instead (deepseek2; see mla.go)
	MoE      *MoE // nil: the dense MLP ffn_{gate,up,down}
}

// MoE is a mixture-of-experts feed-forward block: a router (ffn_gate_inp) scores the experts
// of ffn_{gate,up,down}_exps, the ExpertsUsed best of each token run, and their outputs are
// summed with the router's weights.
type MoE struct {
	// NormTopK renormalises the chosen experts' softmax probabilities to sum to 1.
	NormTopK bool
	// SharedGate: a shared expert (ffn_{gate,up,down}_shexp) runs on every token, its output
	// scaled by sigmoid(ffn_gate_inp_shexp · x).
	SharedGate bool
	// Shared: a shared expert without a gate (deepseek2).
	Shared bool
	// Sigmoid scores the experts with sigmoid(logit) instead of the softmax; a score bias
	// (exp_probs_b), when the file has one, is added to the scores for the choice only.
	Sigmoid bool
	// Scale multiplies the chosen experts' weights (0: 1).
	Scale float32
}

var registry = map[string]*Arch{}

func register(a *Arch) {
	if _, dup := registry[a.Name]; dup {
		panic("model: architecture " + a.Name + " registered twice")
	}
	registry[a.Name] = a
}

// Architectures lists the accepted general.architecture values.
func Architectures() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupArch returns the registered family of name or an error naming it.
func lookupArch(path, name string) (*Arch, error) {
	a, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%s: unsupported architecture %q (supported: %s)", path, name, strings.Join(Architectures(), ", "))
	}
	return a, nil
}

// Keys reads an architecture's metadata keys ("<arch>.<key>") with the file's path in errors.
type Keys struct {
	f    *gguf.File
	arch string
}

// Int reads <arch>.key as a non-negative int below 2^31; def >= 0 is the value of an absent
// key, def < 0 makes it required.
func (k *Keys) Int(key string, def int) (int, error) {
	v, err := k.f.Uint(k.arch + "." + key)
	if errors.Is(err, gguf.ErrNotFound) && def >= 0 {
		return def, nil
	}
	if err != nil {
		return 0, err
	}
	if v > 1<<31 {
		return 0, fmt.Errorf("%s: %s.%s = %d is out of range", k.f.Path, k.arch, key, v)
	}
	return int(v), nil
}

// Float reads <arch>.key as a float (def when absent).
func (k *Keys) Float(key string, def float64) (float64, error) {
	v, err := k.f.Float(k.arch + "." + key)
	if errors.Is(err, gguf.ErrNotFound) {
		return def, nil
	}
	return v, err
}

// Bool reads <arch>.key as a bool (def when absent).
func (k *Keys) Bool(key string, def bool) (bool, error) {
	v, err := k.f.Bool(k.arch + "." + key)
	if errors.Is(err, gguf.ErrNotFound) {
		return def, nil
	}
	return v, err
}

// Errorf formats an error about the file.
func (k *Keys) Errorf(format string, a ...any) error {
	return fmt.Errorf("%s: %s", k.f.Path, fmt.Sprintf(format, a...))
}

// readExperts reads the expert counts llama.cpp writes (<arch>.expert_count,
// .expert_used_count) and the experts' hidden size (<arch>.expert_feed_forward_length, falling
// back to ffnDefault; < 0: required). An absent or zero expert_count leaves a dense model.
func readExperts(r *Keys, c *Config, ffnDefault int) error {
	var err error
	if c.Experts, err = r.Int("expert_count", 0); err != nil {
		return err
	}
	if c.ExpertsUsed, err = r.Int("expert_used_count", 0); err != nil {
		return err
	}
	if c.Experts == 0 {
		if c.ExpertsUsed != 0 {
			return r.Errorf("%s.expert_used_count = %d without experts", r.arch, c.ExpertsUsed)
		}
		return nil
	}
	if c.Experts > 1<<16 || c.ExpertsUsed < 1 || c.ExpertsUsed > c.Experts {
		return r.Errorf("%d experts with %d used per token: want 1 <= used <= experts <= 65536", c.Experts, c.ExpertsUsed)
	}
	c.ExpertFFN, err = r.Int("expert_feed_forward_length", ffnDefault)
	return err
}
