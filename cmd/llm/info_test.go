package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// llm info names each tensor's type and the kernel the quant registry picks for it.
func TestInfoKernels(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	var out, errb bytes.Buffer
	if rc := run([]string{"mkmodel", "--shape", "tiny", "--type", "q4_0", "--layers", "1", "-o", p}, &out, &errb); rc != 0 {
		t.Fatalf("mkmodel rc %d: %s", rc, errb.String())
	}
	out.Reset()
	if rc := run([]string{"info", "-m", p, "--tensors"}, &out, &errb); rc != 0 {
		t.Fatalf("info rc %d: %s", rc, errb.String())
	}
	k, err := quant.KernelName(gguf.Q4_0)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for name, want := range map[string]string{
		"blk.0.attn_q.weight":    "Q4_0 [256 256] " + k,
		"blk.0.attn_norm.weight": "F32 [256] -",
		"token_embd.weight":      "Q4_0 [256 512] rows dequantized on lookup",
		"output.weight":          "Q4_0 [256 512] " + k,
	} {
		if lines[name] != want {
			t.Errorf("%s: %q, want %q", name, lines[name], want)
		}
	}
	if !strings.Contains(out.String(), "  Q4_0   kernel "+k+"\n") {
		t.Errorf("no kernel summary for Q4_0:\n%s", out.String())
	}
}

// A tensor of a type without kernels: an error naming the tensor, its type and the
// supported types.
func TestInfoUnsupportedType(t *testing.T) {
	w := gguf.NewWriter()
	if err := w.Set("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("norm.weight", gguf.F32, []int64{256}, make([]byte, 4*256)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("blk.3.ffn_down.weight", gguf.IQ2_XXS, []int64{256, 2}, make([]byte, 2*66)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "iq2.gguf")
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	rc := run([]string{"info", "-m", p}, &out, &errb)
	msg := errb.String()
	if rc == 0 || !strings.Contains(msg, "blk.3.ffn_down.weight") || !strings.Contains(msg, "IQ2_XXS") ||
		!strings.Contains(msg, quant.SupportedNames()) {
		t.Fatalf("rc %d, stderr %q", rc, msg)
	}
}
