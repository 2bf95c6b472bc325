package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
)

func generateText(t *testing.T, path string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := run([]string{"generate", "-m", path, "-p", "Once upon a time", "-n", "24"}, &out, &errb); rc != 0 {
		t.Fatalf("generate -m %s: rc %d: %s", path, rc, errb.String())
	}
	return out.String()
}

// A model split by llm split (byte for byte as llama-gguf-split splits it: see
// llm/gguf's TestSplitMatchesLlamaCpp) generates the unsplit model's tokens, opened from any
// part; --merge gives back the original file.
func TestSplitGenerates(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	want := generateText(t, src)
	dir := t.TempDir()
	for _, c := range []struct {
		args  []string
		parts int
	}{
		{[]string{"--split-max-size", "300K"}, 5},
		{[]string{"--split-max-tensors", "20", "--no-tensor-first-split"}, 4},
	} {
		prefix := filepath.Join(dir, "s"+c.args[1])
		var out, errb bytes.Buffer
		if rc := run(append(append([]string{"split"}, c.args...), src, prefix), &out, &errb); rc != 0 {
			t.Fatalf("split %v: rc %d: %s", c.args, rc, errb.String())
		}
		if !strings.Contains(out.String(), "n_split: ") {
			t.Errorf("split output %q", out.String())
		}
		paths, _ := filepath.Glob(prefix + "-*.gguf")
		if len(paths) != c.parts {
			t.Fatalf("%v: %d parts %v, want %d", c.args, len(paths), paths, c.parts)
		}
		for _, p := range []string{paths[0], paths[len(paths)-1]} {
			if got := generateText(t, p); got != want {
				t.Errorf("%v: from %s: %q, want %q", c.args, filepath.Base(p), got, want)
			}
		}
		merged := prefix + "-merged.gguf"
		if rc := run([]string{"split", "--merge", paths[1], merged}, &out, &errb); rc != 0 {
			t.Fatalf("merge: rc %d: %s", rc, errb.String())
		}
		a, _ := os.ReadFile(src)
		b, _ := os.ReadFile(merged)
		if !bytes.Equal(a, b) {
			t.Errorf("%v: merged file differs from the source (%d vs %d bytes)", c.args, len(b), len(a))
		}
	}
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"split", "--split-max-size", "0M", src, filepath.Join(dir, "x")},
		{"split", "--split-max-size", "1M", "--split-max-tensors", "3", src, filepath.Join(dir, "x")},
		{"split", "--split-max-tensors", "3", src, filepath.Join(dir, "x.gguf")},
		{"split", filepath.Join(dir, "absent.gguf"), filepath.Join(dir, "x")},
	} {
		errb.Reset()
		if rc := run(args, &out, &errb); rc != 1 || errb.Len() == 0 {
			t.Errorf("%v: rc %d, stderr %q", args, rc, errb.String())
		}
	}
}

// llm quantize with a split flag writes the parts of the file it writes unsplit, and drops a
// split input's split keys when the output is one file.
func TestQuantizeSplit(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K-ff192-q8_0.gguf")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	one := filepath.Join(dir, "q8.gguf")
	if rc := run([]string{"quantize", "--quiet", src, one, "Q4_0"}, &out, &errb); rc != 0 {
		t.Fatalf("quantize: rc %d: %s", rc, errb.String())
	}
	if rc := run([]string{"quantize", "--quiet", "--split-max-tensors", "16", src, filepath.Join(dir, "q8s.gguf"), "Q4_0"}, &out, &errb); rc != 0 {
		t.Fatalf("quantize split: rc %d: %s", rc, errb.String())
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "q8s-*-of-00003.gguf"))
	if len(paths) != 3 {
		t.Fatalf("parts %v", paths)
	}
	a, err := gguf.Open(one)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m, err := gguf.Open(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(a.Tensors) != len(m.Tensors) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(a.Tensors))
	}
	for i := range a.Tensors {
		if a.Tensors[i].Name != m.Tensors[i].Name || !bytes.Equal(a.TensorData(&a.Tensors[i]), m.TensorData(&m.Tensors[i])) {
			t.Errorf("tensor %s differs", a.Tensors[i].Name)
		}
	}
	if got, want := generateText(t, paths[0]), generateText(t, one); got != want {
		t.Errorf("split: %q, want %q", got, want)
	}
	// Split input, one output file: no split keys carried over.
	again := filepath.Join(dir, "again.gguf")
	if rc := run([]string{"quantize", "--quiet", paths[1], again, "Q4_0"}, &out, &errb); rc != 0 {
		t.Fatalf("quantize from split: rc %d: %s", rc, errb.String())
	}
	x, _ := os.ReadFile(one)
	y, _ := os.ReadFile(again)
	if !bytes.Equal(x, y) {
		t.Errorf("quantizing the split model differs from quantizing the unsplit one")
	}
}
