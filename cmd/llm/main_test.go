package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/model"
)

func TestGenerateReference(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"generate", "-m", path, "-p", "Once upon a time", "-n", "32"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	// llama.cpp's greedy continuation (reference-once-upon-a-time.json).
	want := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
	if !strings.Contains(errb.String(), "tokens/s") {
		t.Errorf("no timing summary: %q", errb.String())
	}
}

func TestMkmodelInfoBench(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--shape", "tiny", "--type", "q4_0", "--layers", "1", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	out.Reset()
	if rc := run([]string{"info", "-m", p}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "degrees that work: [1 2 4 8]") ||
		!strings.Contains(out.String(), "tensor types: F32 x3, Q4_0 x") {
		t.Fatalf("info rc %d: %s %s", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := run([]string{"bench", "-m", p, "-p", "16", "-n", "4", "-r", "1", "-o", "jsonl"}, &out, &errb); rc != 0 {
		t.Fatalf("bench rc %d: %s", rc, errb.String())
	}
	var tests []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r benchResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.TPS <= 0 || len(r.Samples) != 1 || r.Ranks != 1 || len(r.RankRSS) != 1 || r.RankRSS[0] <= 0 {
			t.Errorf("bad row %+v", r)
		}
		tests = append(tests, r.Test)
	}
	if strings.Join(tests, ",") != "pp16,tg4" {
		t.Errorf("tests %v", tests)
	}
}

func TestBadInput(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"generate", "-m", "/nonexistent.gguf"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "nonexistent") {
		t.Errorf("missing file: rc %d, %q", rc, errb.String())
	}
	if rc := run([]string{"frobnicate"}, &out, &errb); rc != 2 {
		t.Errorf("unknown command: rc %d", rc)
	}
	if rc := run([]string{"mkmodel", "--shape", "nope", "-o", "x"}, &out, &errb); rc != 1 {
		t.Errorf("unknown shape: rc %d", rc)
	}
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	os.WriteFile(junk, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644)
	for _, c := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"quantize", "a.gguf"}, 2, "usage: llm quantize"},
		{[]string{"quantize", "a.gguf", "b.gguf", "Q9_K"}, 1, `unknown quantization type "Q9_K"`},
		{[]string{"quantize", "/nonexistent.gguf", filepath.Join(dir, "b.gguf"), "Q4_K_M"}, 1, "nonexistent"},
		{[]string{"quantize", junk, filepath.Join(dir, "b.gguf"), "Q4_K_M"}, 1, "junk.gguf"},
	} {
		errb.Reset()
		if rc := run(c.args, &out, &errb); rc != c.rc || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: rc %d, %q; want rc %d and %q", c.args, rc, errb.String(), c.rc, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.gguf")); err == nil {
		t.Error("a failed quantize left its output file")
	}
}

// A mixture-of-experts model: mkmodel writes the expert shape it is given, info shows it,
// bench reports the routing (every assignment on some expert, per-rank shares summing up).
func TestMkmodelInfoBenchMoE(t *testing.T) {
	p := filepath.Join(t.TempDir(), "moe.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--shape", "qwen3moe-tiny", "--type", "q8_0", "--experts", "4", "--experts-used", "2", "--layers", "1", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "4 experts (2 per token)") {
		t.Errorf("mkmodel: %s", out.String())
	}
	out.Reset()
	if rc := run([]string{"info", "-m", p}, &out, &errb); rc != 0 ||
		!strings.Contains(out.String(), "mixture of experts: 4 experts, 2 active per token, expert FFN 256, shared expert none, 0 dense layers") ||
		!strings.Contains(out.String(), "even at EP [1 2 4]") {
		t.Fatalf("info rc %d: %s %s", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := run([]string{"bench", "-m", p, "-p", "16", "-n", "4", "-r", "1"}, &out, &errb); rc != 0 {
		t.Fatalf("bench rc %d: %s", rc, errb.String())
	}
	// One layer, 2 experts per token, warm-up and timed run of each test: 2*(16+16+1+4).
	if want := "routing: 74 token-expert assignments"; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "rank 0: experts 0..3, 74 assignments (100.0%)") {
		t.Errorf("bench output lacks %q:\n%s", want, out.String())
	}
}

// --expert-split weighs the ranks of a stage; a list of the wrong length or a bad weight is
// refused by name before the model is read (more ranks: .ci/steps/42-llm-pp.sh).
func TestExpertSplitFlag(t *testing.T) {
	p := filepath.Join(t.TempDir(), "moe.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--shape", "qwen3moe-tiny", "--type", "q8_0", "--layers", "1", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	gen := func(extra ...string) (string, string, int) {
		var o, e bytes.Buffer
		rc := run(append([]string{"generate", "-m", p, "-p", "hello", "-n", "4", "--quiet"}, extra...), &o, &e)
		return o.String(), e.String(), rc
	}
	want, errs, rc := gen()
	if rc != 0 {
		t.Fatalf("generate rc %d: %s", rc, errs)
	}
	if got, errs, rc := gen("--expert-split", "5"); rc != 0 || got != want {
		t.Errorf("--expert-split 5 on one rank: rc %d, %q, want %q (%s)", rc, got, want, errs)
	}
	for _, c := range []struct{ arg, msg string }{
		{"3,1", `--expert-split "3,1": give one weight per rank of a stage (1)`},
		{"x", `--expert-split "x": "x" is not a weight in [0, 1048576]`},
		{"-1", `"-1" is not a weight`},
		{"0", "all zero"},
	} {
		if _, errs, rc := gen("--expert-split", c.arg); rc == 0 || !strings.Contains(errs, c.msg) {
			t.Errorf("--expert-split %s: rc %d, stderr %q, want %q", c.arg, rc, errs, c.msg)
		}
	}
}

// mkmodel --from upcycles the trained stories260K: the file has the asked MoE shape, and its
// greedy text is the trained model's opening (llama.cpp's tokens on it are checked in
// llm/model's TestMoEMatchesLlamaCpp); flags that do not apply are refused by name.
func TestMkmodelFrom(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	dir := t.TempDir()
	p := filepath.Join(dir, "up.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--from", src, "--arch", "qwen2moe", "--experts", "4", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "upcycled to qwen2moe, dim 256, FFN 256, 4 experts (2 per token), perturbation 0.2") {
		t.Errorf("mkmodel: %s", out.String())
	}
	out.Reset()
	if rc := run([]string{"info", "-m", p}, &out, &errb); rc != 0 ||
		!strings.Contains(out.String(), "model: qwen2moe, dim 256, 5 layers, 8 heads / 4 KV heads of 32") ||
		!strings.Contains(out.String(), "mixture of experts: 4 experts, 2 active per token, expert FFN 256, shared expert FFN 256, 0 dense layers") {
		t.Fatalf("info rc %d: %s %s", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := run([]string{"generate", "-m", p, "-n", "12", "--quiet"}, &out, &errb); rc != 0 {
		t.Fatalf("generate rc %d: %s", rc, errb.String())
	}
	if want := "Once upon a time, there was a little girl named Lily."; !strings.HasPrefix(out.String(), want) {
		t.Errorf("upcycled model's text %q, want it to start %q", out.String(), want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "q8_0"}, "--from writes F32"},
		{[]string{"--shape", "tiny"}, "--shape does not apply with --from"},
		{[]string{"--arch", "qwen3moe"}, `architecture "qwen3moe"`},
		{[]string{"--dim", "32"}, "want at least the source's 64"},
	} {
		errb.Reset()
		args := append([]string{"mkmodel", "--from", src, "-o", filepath.Join(dir, "bad.gguf")}, c.args...)
		if rc := run(args, &out, &errb); rc != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: rc %d, %q; want %q", c.args, rc, errb.String(), c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.gguf")); err == nil {
		t.Error("a refused mkmodel left its output file")
	}
}

// --kv-type on a latent-attention model (deepseek2): bench reports the compressed cache's bytes
// per token by the formula of each type (f16, f32: 2 or 4 bytes per latent and rotary value;
// q8_0: the latent in Q8_0 blocks of 34 bytes per 32 values, the rotary key in F32), generate
// runs with the q8_0 latent cache, and q4_0 is refused by name.
func TestBenchGenerateLatentKVTypes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ds.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--shape", "deepseek2-tiny", "--type", "q8_0", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	s := model.Shapes["deepseek2-tiny"]
	for _, c := range []struct {
		kv   string
		want int
	}{
		{"f16", s.Layers * (s.KVLoraRank + s.RopeDim) * 2},
		{"f32", s.Layers * (s.KVLoraRank + s.RopeDim) * 4},
		{"q8_0", s.Layers * (s.KVLoraRank/32*34 + s.RopeDim*4)},
	} {
		out.Reset()
		errb.Reset()
		if rc := run([]string{"bench", "-m", p, "-p", "8", "-n", "2", "-r", "1", "--kv-type", c.kv}, &out, &errb); rc != 0 {
			t.Fatalf("bench --kv-type %s rc %d: %s", c.kv, rc, errb.String())
		}
		if want := fmt.Sprintf("KV cache: %d bytes per token on each rank (latent attention", c.want); !strings.Contains(out.String(), want) {
			t.Errorf("bench --kv-type %s output lacks %q:\n%s", c.kv, want, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	if rc := run([]string{"generate", "-m", p, "-n", "4", "--kv-type", "q8_0", "--quiet", "--no-progress"}, &out, &errb); rc != 0 || out.Len() == 0 {
		t.Errorf("generate --kv-type q8_0 rc %d, output %q: %s", rc, out.String(), errb.String())
	}
	errb.Reset()
	if rc := run([]string{"generate", "-m", p, "-n", "4", "--kv-type", "q4_0", "--quiet", "--no-progress"}, &out, &errb); rc == 0 || !strings.Contains(errb.String(), "latent cache is f16, f32 or q8_0") {
		t.Errorf("generate --kv-type q4_0 on deepseek2: rc %d, %s", rc, errb.String())
	}
}
