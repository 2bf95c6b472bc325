package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

func TestPlan(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	hf := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hf, []byte("a slots=1\nb slots=1\n"), 0o644)
	plan := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := run(append([]string{"plan", "-m", src}, args...), &out, &errb); rc != 0 {
			t.Fatalf("plan %v: rc %d: %s", args, rc, errb.String())
		}
		return out.String()
	}
	// Unequal memory: the 5 layers split 3:2 in proportion (3M vs 2M); both layouts fit.
	out := plan("--hostfile", hf, "--mem", "3M,2M", "-c", "256", "-b", "16")
	for _, want := range []string{"layout TP=2 (tensor parallel over all ranks, runnable today)", "layers [3 2] (in proportion to memory)",
		"host a: ", "fits (", "TP=2: ", "in 10 allreduces", "PP=2: 0.2 KiB in 1 stage-to-stage sends", "recommended: "} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// The PP layout's command pins the split.
	if want := "llm generate -m " + src + " --pp 2 --layer-split 3,2"; !strings.Contains(out, want) || strings.Contains(out, "NOT YET RUNNABLE") {
		t.Errorf("missing %q in:\n%s", want, out)
	}
	// By hand, and a memory too small for either layout.
	out = plan("--hostfile", hf, "--mem", "100K", "--layer-split", "1,4")
	for _, want := range []string{"layers [1 4] (by hand)", "DOES NOT FIT", "neither layout fits"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// TP=6 cannot divide 8 heads: said, not hidden.
	if out = plan("-n", "6", "--mem", "1G"); !strings.Contains(out, "not possible: tensor-parallel degree 6 does not divide the 8 query heads") {
		t.Errorf("TP=6:\n%s", out)
	}
	var o, e bytes.Buffer
	for _, args := range [][]string{
		{"plan", "-m", src, "--hostfile", hf, "--layer-split", "2,2"},
		{"plan", "-m", src, "--hostfile", hf, "--mem", "1G,2G,3G"},
		{"plan", "-m", src, "--link-bw", "fast"},
		{"plan", "-m", filepath.Join(t.TempDir(), "none.gguf")},
	} {
		e.Reset()
		if rc := run(args, &o, &e); rc != 1 || e.Len() == 0 {
			t.Errorf("%v: rc %d, stderr %q", args, rc, e.String())
		}
	}
}
