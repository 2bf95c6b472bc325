package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// One rank stages its own copy from a split model and generates from it; the process runs
// over gorun are in .ci/steps/41-llm-stage.sh, the multi-rank protocol in llm/stage's tests.
func TestStageCommand(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	want := generateText(t, src)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if rc := run([]string{"split", "--split-max-tensors", "16", src, filepath.Join(dir, "m")}, &out, &errb); rc != 0 {
		t.Fatalf("split: %s", errb.String())
	}
	out.Reset()
	to := filepath.Join(dir, "staged{rank}")
	if rc := run([]string{"stage", "-m", filepath.Join(dir, "m-00002-of-00003.gguf"), "--to", to, "--quiet"}, &out, &errb); rc != 0 {
		t.Fatalf("stage: rc %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "48 tensors, 0 already staged; 1171200 bytes received in") {
		t.Errorf("stage printed %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "staged0", "stage.json")); err != nil {
		t.Fatal(err)
	}
	if got := generateText(t, to); got != want {
		t.Errorf("from the staged copy: %q, want %q", got, want)
	}
	out.Reset()
	if rc := run([]string{"stage", "-m", src, "--to", to, "--quiet"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "48 already staged; 0 bytes received in") {
		t.Errorf("restage: rc %d: %q %s", rc, out.String(), errb.String())
	}
	errb.Reset()
	if rc := run([]string{"stage", "-m", src}, &out, &errb); rc == 0 || !strings.Contains(errb.String(), "--to DIR") {
		t.Errorf("no --to: rc %d %q", rc, errb.String())
	}
}
