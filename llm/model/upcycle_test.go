package model_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// Widening stories260K to dim 256 and FFN 256 (zero dimensions, RMSNorm weights and epsilon
// rescaled) keeps its function: with an F32 KV cache, the logits of a prompt and 32 greedy
// steps equal the original's within 1e-4 (logits of size ~10), and the tokens are the same.
func TestUpcycleWidenedKeepsLogits(t *testing.T) {
	srcPath := testfiles.Path(t, "llm", "stories260K.gguf")
	src, err := gguf.Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	u := model.DefaultUpcycle
	u.Arch, u.Experts, u.ExpertsUsed = "llama", 0, 0
	var b bytes.Buffer
	if err := model.WriteUpcycled(&b, src, u); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wide.gguf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(p string) ([]int32, [][]float32) {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := model.Load(f, model.Options{Context: 128, KVType: "f32"})
		if err != nil {
			t.Fatal(err)
		}
		if m.Cfg.Dim != map[string]int{srcPath: 64, path: 256}[p] {
			t.Fatalf("%s: dim %d", p, m.Cfg.Dim)
		}
		if err := m.Forward([]int32{1, 403, 407, 261, 378}); err != nil {
			t.Fatal(err)
		}
		var ids []int32
		var ls [][]float32
		for len(ids) < 32 {
			l, err := m.Logits()
			if err != nil {
				t.Fatal(err)
			}
			id, err := m.Argmax()
			if err != nil {
				t.Fatal(err)
			}
			ids, ls = append(ids, id), append(ls, append([]float32(nil), l...))
			if err := m.Forward([]int32{id}); err != nil {
				t.Fatal(err)
			}
		}
		return ids, ls
	}
	wantIDs, want := run(srcPath)
	gotIDs, got := run(path)
	var d float64
	for s := range want {
		for i := range want[s] {
			d = max(d, math.Abs(float64(got[s][i]-want[s][i])))
		}
	}
	t.Logf("widened vs original: logits max |diff| %.2g over %d steps", d, len(want))
	if d > 1e-4 {
		t.Errorf("widened model's logits differ from the original's by up to %g", d)
	}
	for i := range wantIDs {
		if gotIDs[i] != wantIDs[i] {
			t.Fatalf("step %d: widened %d, original %d", i, gotIDs[i], wantIDs[i])
		}
	}
}

// Bad requests name what is wrong.
func TestUpcycleRefusesBadInput(t *testing.T) {
	src, err := gguf.Open(testfiles.Path(t, "llm", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, c := range []struct {
		edit func(*model.Upcycle)
		want string
	}{
		{func(u *model.Upcycle) { u.Dim = 32 }, "want at least the source's 64"},
		{func(u *model.Upcycle) { u.Arch = "qwen3moe" }, `architecture "qwen3moe"`},
		{func(u *model.Upcycle) { u.Arch, u.Experts = "qwen2moe", 0 }, "qwen2moe needs experts"},
		{func(u *model.Upcycle) { u.ExpertsUsed = 9 }, "8 experts, 9 used"},
		{func(u *model.Upcycle) { u.Arch, u.Dim = "qwen2moe", 200 }, "must be a multiple"},
		{func(u *model.Upcycle) { u.Perturb = -1 }, "perturbation -1"},
	} {
		u := model.DefaultUpcycle
		u.Arch = "llama"
		c.edit(&u)
		var b bytes.Buffer
		err := model.WriteUpcycled(&b, src, u)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", u, err, c.want)
		}
	}
}
