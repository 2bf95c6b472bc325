package quant

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Preset is one of llama-quantize's file types: a base tensor type and, for the quantized
// ones, the rules that give some tensors more bits (llama.cpp's llama_tensor_get_type, for the
// types this package has, with the rules for mixtures of experts; the importance-matrix-only
// rules and Falcon's are not here).
type Preset struct {
	Name  string
	FType uint32    // general.file_type, llama.h's LLAMA_FTYPE_* number
	Base  gguf.Type // the type of every quantized tensor the rules leave alone
}

var presets = []Preset{
	{"F32", 0, gguf.F32}, {"F16", 1, gguf.F16}, {"BF16", 32, gguf.BF16},
	{"Q4_0", 2, gguf.Q4_0}, {"Q4_1", 3, gguf.Q4_1}, {"Q5_0", 8, gguf.Q5_0}, {"Q5_1", 9, gguf.Q5_1},
	{"Q8_0", 7, gguf.Q8_0}, {"Q2_K", 10, gguf.Q2_K},
	{"Q3_K_S", 11, gguf.Q3_K}, {"Q3_K_M", 12, gguf.Q3_K}, {"Q3_K_L", 13, gguf.Q3_K},
	{"Q4_K_S", 14, gguf.Q4_K}, {"Q4_K_M", 15, gguf.Q4_K}, {"Q5_K_S", 16, gguf.Q5_K}, {"Q5_K_M", 17, gguf.Q5_K},
	{"Q6_K", 18, gguf.Q6_K}, {"IQ4_NL", 25, gguf.IQ4_NL}, {"IQ4_XS", 30, gguf.IQ4_XS},
}

// PresetByName finds a preset by its llama-quantize name (case-insensitive; "Q4_K" and "Q3_K"
// are Q4_K_M and Q3_K_M, as there).
func PresetByName(s string) (Preset, error) {
	u := strings.ToUpper(s)
	switch u {
	case "Q4_K":
		u = "Q4_K_M"
	case "Q3_K":
		u = "Q3_K_M"
	case "Q5_K":
		u = "Q5_K_M"
	}
	for _, p := range presets {
		if p.Name == u {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("quant: unknown quantization type %q (known: %s)", s, PresetNames())
}

// PresetNames lists the presets, space-separated.
func PresetNames() string {
	var b strings.Builder
	for i, p := range presets {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Name)
	}
	return b.String()
}

// TensorShape is what a plan needs of a tensor: its name, dims (ne[0] first: the row length)
// and current type.
type TensorShape struct {
	Name string
	Dims []int64
	Type gguf.Type
}

// ModelInfo is what the rules need of the model.
type ModelInfo struct {
	Layers int // blocks (ggml's n_layer)
	GQA    int // attention heads per KV head
	// Experts is the routed experts per layer (the GGUF's ARCH.expert_count; 0 or 1: dense).
	// With more than one, ffn_down's layer is read from its name; with exactly 8 (llama.cpp
	// tests n_expert == 8), attn_k and attn_v become Q8_0 and attn_output Q5_K in most presets.
	Experts int
	// Big70B marks a Llama of 80 layers with grouped KV heads and not 8 experts (llama.cpp's
	// 70B type), whose attn_v gets Q5_K instead of Q3_K or Q4_K.
	Big70B bool
}

// Plan gives the type each tensor takes under p, in the order of ts; a tensor that is not
// quantized keeps its type. Tensors are visited in TensorLess order, as llama-quantize does
// (its layer counters for attn_v and ffn_down follow that order). A row length that no type of the
// fallback chain divides is an error.
func (p Preset) Plan(m ModelInfo, ts []TensorShape) ([]gguf.Type, error) {
	order := make([]int, len(ts))
	hasOutput := false
	nAttnV := 0
	for i, t := range ts {
		order[i] = i
		if strings.Contains(t.Name, "attn_v.weight") || strings.Contains(t.Name, "attn_qkv.weight") || strings.Contains(t.Name, "attn_kv_b.weight") {
			nAttnV++
		} else if t.Name == "output.weight" {
			hasOutput = true
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return TensorLess(ts[order[a]].Name, ts[order[b]].Name) })
	st := &planState{p: p, m: m, hasOutput: hasOutput, nAttnV: nAttnV}
	out := make([]gguf.Type, len(ts))
	for _, i := range order {
		t := ts[i]
		out[i] = t.Type
		if !quantizable(t) {
			continue
		}
		nt := p.Base
		if nt.BlockSize() > 1 {
			var err error
			if nt, err = st.tensorType(t); err != nil {
				return nil, err
			}
		}
		out[i] = nt
	}
	return out, nil
}

// quantizable is llama-quantize's choice of tensors to convert: weights of two or more
// dimensions, except norms and a few small special tensors.
func quantizable(t TensorShape) bool {
	n := t.Name
	if !strings.HasSuffix(n, "weight") || len(t.Dims) < 2 || strings.Contains(n, "_norm.weight") {
		return false
	}
	for _, s := range []string{"ffn_gate_inp.weight", "ssm_conv1d.weight", "time_mix_first.weight",
		"time_mix_w1.weight", "time_mix_w2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
		"time_mix_lerp_fused.weight", "attn_rel_b.weight"} {
		if strings.Contains(n, s) {
			return false
		}
	}
	return n != "position_embd.weight" && n != "token_types.weight"
}

type planState struct {
	p         Preset
	m         ModelInfo
	hasOutput bool
	nAttnV    int
	iAttnV    int
	iFFNDown  int
}

// layerOf reads the layer of a tensor named blk.N...., which must be in [0, n).
func layerOf(name string, n int) (int, error) {
	i, ok := nameLayer(name)
	if !ok {
		return 0, fmt.Errorf("quant: tensor %s: no layer number (blk.N.) in its name", name)
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("quant: tensor %s: layer %d, but the model has %d", name, i, n)
	}
	return i, nil
}

// nameLayer is the N of a name that starts blk.N (an optional sign, then up to 9 digits).
func nameLayer(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	end := 0
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		end++
	}
	start := end
	for end < len(rest) && end-start < 9 && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	if end == start {
		return 0, false
	}
	i, err := strconv.Atoi(rest[:end])
	return i, err == nil
}

// TensorLess is the order in which llama-quantize visits and writes tensors (its loader's
// weight_name_comparer): by layer, the tensors without one (blk.N.) first, then by name.
func TensorLess(a, b string) bool {
	la, ok := nameLayer(a)
	if !ok {
		la = -1
	}
	lb, ok := nameLayer(b)
	if !ok {
		lb = -1
	}
	if la != lb {
		return la < lb
	}
	return a < b
}

// moreBits is llama.cpp's use_more_bits: the first and last eighth of the layers and every
// third in between.
func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

func (s *planState) tensorType(t TensorShape) (gguf.Type, error) {
	name, f, nt := t.Name, s.p.Name, s.p.Base
	cols := t.Dims[0]
	switch {
	case name == "output.weight" || (!s.hasOutput && name == "token_embd.weight"):
		if cols%int64(nt.BlockSize()) != 0 {
			nt = gguf.Q8_0
		} else if nt != gguf.Q8_0 {
			nt = gguf.Q6_K
		}
	case name == "token_embd.weight":
	case strings.Contains(name, "attn_v.weight"):
		switch {
		case f == "Q2_K":
			nt = gguf.Q3_K
			if s.m.GQA >= 4 {
				nt = gguf.Q4_K
			}
		case f == "Q3_K_M":
			nt = gguf.Q4_K
			if s.iAttnV < 2 {
				nt = gguf.Q5_K
			}
		case f == "Q3_K_L":
			nt = gguf.Q5_K
		case (f == "IQ4_NL" || f == "IQ4_XS") && s.m.GQA >= 4:
			nt = gguf.Q5_K
		case (f == "Q4_K_M" || f == "Q5_K_M") && moreBits(s.iAttnV, s.nAttnV):
			nt = gguf.Q6_K
		case f == "Q4_K_S" && s.iAttnV < 4:
			nt = gguf.Q5_K
		}
		if s.m.Big70B && (nt == gguf.Q3_K || nt == gguf.Q4_K) {
			nt = gguf.Q5_K
		}
		if s.m.Experts == 8 {
			nt = gguf.Q8_0
		}
		s.iAttnV++
	case strings.Contains(name, "attn_k.weight"):
		if s.m.Experts == 8 {
			nt = gguf.Q8_0
		}
	case strings.Contains(name, "attn_q.weight"):
	case strings.Contains(name, "ffn_down"):
		i, n := s.iFFNDown, s.m.Layers
		if s.m.Experts > 1 {
			// Expert models: the layer from the name (llama.cpp does so because Mixtral files
			// do not keep a layer's tensors together).
			var err error
			if i, err = layerOf(name, n); err != nil {
				return 0, err
			}
		}
		switch {
		case f == "Q2_K":
			nt = gguf.Q3_K
		case f == "Q3_K_M":
			nt = gguf.Q4_K
			if i < n/16 {
				nt = gguf.Q5_K
			}
		case f == "Q3_K_L":
			nt = gguf.Q5_K
		case f == "Q4_K_M":
			if moreBits(i, n) {
				nt = gguf.Q6_K
			}
		case i < n/8 && (f == "IQ4_NL" || f == "IQ4_XS"):
			nt = gguf.Q5_K
		case f == "Q5_K_M" && moreBits(i, n):
			nt = gguf.Q6_K
		case f == "Q4_K_S" && i < n/8:
			nt = gguf.Q5_K
		}
		s.iFFNDown++
	case strings.Contains(name, "attn_output.weight") && s.m.Experts == 8:
		switch f {
		case "Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ4_XS":
			nt = gguf.Q5_K
		}
	case strings.Contains(name, "attn_output.weight"):
		switch f {
		case "Q2_K":
			nt = gguf.Q3_K
		case "Q3_K_M":
			nt = gguf.Q4_K
		case "Q3_K_L":
			nt = gguf.Q5_K
		}
	case strings.Contains(name, "attn_qkv.weight"):
		switch f {
		case "Q3_K_M", "Q3_K_L":
			nt = gguf.Q4_K
		case "Q4_K_M":
			nt = gguf.Q5_K
		case "Q5_K_M":
			nt = gguf.Q6_K
		}
	}
	if cols%int64(nt.BlockSize()) == 0 {
		return nt, nil
	}
	// Rows that are not whole blocks: llama-quantize's fallbacks, then F16.
	switch nt {
	case gguf.Q2_K, gguf.Q3_K, gguf.IQ4_XS:
		nt = gguf.IQ4_NL
	case gguf.Q4_K:
		nt = gguf.Q5_0
	case gguf.Q5_K:
		nt = gguf.Q5_1
	case gguf.Q6_K:
		nt = gguf.Q8_0
	default:
		return 0, fmt.Errorf("quant: tensor %s: rows of %d elements are not whole %s blocks of %d", name, cols, nt, nt.BlockSize())
	}
	if cols%int64(nt.BlockSize()) != 0 {
		nt = gguf.F16
	}
	return nt, nil
}
