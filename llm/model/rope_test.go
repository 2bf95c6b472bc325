package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// RoPE against llama.cpp's ROPE node (testdata/rope-reference.json: its input and output for
// two heads at positions 0-25 of a qwen2moe file): at least 99% of the rotated elements
// identical to llama.cpp's and the rest within 2^-22 of the row's largest input (Go's cos/sin
// of the float32 angle against glibc's cosf/sinf, an ulp apart; 1656 of 1664 identical).
// Float64 angles and an unfused x0*cos - x1*sin left 574 of them different, 8 beyond that bound.
func TestRopeMatchesLlamaCpp(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "rope-reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Base      float64     `json:"base"`
		Dims      int         `json:"dims"`
		Neox      bool        `json:"neox"`
		Positions []int       `json:"positions"`
		PerPos    int         `json:"heads_per_position"`
		In        [][]float32 `json:"in"`
		Out       [][]float32 `json:"out"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if !ref.Neox || ref.Dims == 0 || len(ref.In) != len(ref.Positions)*ref.PerPos || len(ref.Out) != len(ref.In) {
		t.Fatalf("malformed reference: %d positions, %d heads each, %d inputs, %d outputs", len(ref.Positions), ref.PerPos, len(ref.In), len(ref.Out))
	}
	m := &Model{Cfg: Config{RopeStyle: RopeNeox, RopeBase: ref.Base, RopeDim: ref.Dims, RopeScale: 1}}
	half, n := ref.Dims/2, len(ref.Positions)
	m.scratch.cos, m.scratch.sin = make([]float32, n*half), make([]float32, n*half)
	m.ropeTables(n, func(i int) int { return ref.Positions[i] })
	var same, total int
	for r, in := range ref.In {
		i := r / ref.PerPos
		v := append([]float32(nil), in...)
		var big float32
		for _, x := range in {
			big = max(big, float32(math.Abs(float64(x))))
		}
		m.rope(v, m.scratch.cos[i*half:(i+1)*half], m.scratch.sin[i*half:(i+1)*half])
		for j, got := range v {
			want := ref.Out[r][j]
			if got == want {
				same++
			} else if math.Abs(float64(got-want)) > math.Ldexp(float64(big), -22) {
				t.Errorf("position %d, row %d, element %d: %v, llama.cpp %v", ref.Positions[i], r, j, got, want)
			}
			total++
		}
	}
	t.Logf("%d of %d rotated elements equal llama.cpp's", same, total)
	if same*100 < total*99 {
		t.Errorf("only %d of %d rotated elements equal llama.cpp's", same, total)
	}
}
