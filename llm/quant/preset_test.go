package quant

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// llama-quantize's loader orders tensors by the layer of blk.N. (none first), then by name:
// blk.10 after blk.2, unlike plain name order.
func TestTensorLessIsLlamaQuantizeOrder(t *testing.T) {
	names := []string{"blk.10.attn_v.weight", "token_embd.weight", "blk.2.ffn_down.weight",
		"output.weight", "blk.2.attn_v.weight", "blk.1.attn_v.weight", "output_norm.weight"}
	slices.SortStableFunc(names, func(a, b string) int {
		if TensorLess(a, b) {
			return -1
		}
		if TensorLess(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"output.weight", "output_norm.weight", "token_embd.weight", "blk.1.attn_v.weight",
		"blk.2.attn_v.weight", "blk.2.ffn_down.weight", "blk.10.attn_v.weight"}
	if !slices.Equal(names, want) {
		t.Errorf("order\n got  %v\n want %v", names, want)
	}
}

// With 12 dense layers the attn_v counter runs in llama-quantize's order: Q4_K_M gives Q6_K to
// the layers use_more_bits picks (0, 3, 6, 9, 10, 11 of 12), which plain name order would
// give to other layers (blk.10 and blk.11 come before blk.2 there).
func TestPlanCountsLayersInLlamaQuantizeOrder(t *testing.T) {
	var ts []TensorShape
	for i := range 12 {
		ts = append(ts, TensorShape{Name: "blk." + strconv.Itoa(i) + ".attn_v.weight", Dims: []int64{256, 256}, Type: gguf.F32})
	}
	p, err := PresetByName("Q4_K_M")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(ModelInfo{Layers: 12, GQA: 1}, ts)
	if err != nil {
		t.Fatal(err)
	}
	for i, typ := range plan {
		want := gguf.Q4_K
		if moreBits(i, 12) {
			want = gguf.Q6_K
		}
		if typ != want {
			t.Errorf("%s: %s, want %s", ts[i].Name, typ, want)
		}
	}
}

// An expert model's ffn_down needs its layer in its name; a missing or out-of-range one is an
// error naming the tensor.
func TestPlanExpertLayerFromName(t *testing.T) {
	p, err := PresetByName("Q4_K_M")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ffn_down_exps.weight", "blk.x.ffn_down_exps.weight", "blk.4.ffn_down_exps.weight", "blk.-1.ffn_down.weight"} {
		ts := []TensorShape{{Name: name, Dims: []int64{256, 256, 8}, Type: gguf.F32}}
		_, err := p.Plan(ModelInfo{Layers: 4, Experts: 8}, ts)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming the tensor", name, err)
		}
	}
	ts := []TensorShape{{Name: "blk.3.ffn_down_exps.weight", Dims: []int64{256, 256, 8}, Type: gguf.F32}}
	plan, err := p.Plan(ModelInfo{Layers: 4, Experts: 8}, ts)
	if err != nil || plan[0] != gguf.Q6_K { // layer 3 of 4: use_more_bits
		t.Errorf("blk.3.ffn_down_exps: %v %v, want Q6_K", plan, err)
	}
}
