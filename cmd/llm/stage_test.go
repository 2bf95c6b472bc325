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

// One staging rank for a two-rank pipeline job holds both stages; the layer split is given,
// or follows --mem, and is printed; a one-rank job is refused the copy with what differs; bad
// layouts fail before anything is staged.
func TestStagePipelineCommand(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	dir := t.TempDir()
	stageOut := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"stage", "-m", src, "--quiet"}, args...), &out, &errb)
		return out.String(), errb.String(), rc
	}
	out, errs, rc := stageOut("--to", filepath.Join(dir, "a"), "--pp", "2", "--tp", "1", "--layer-split", "2,3")
	if rc != 0 || !strings.Contains(out, "layer split 2,3 (by hand)") || !strings.Contains(out, "48 tensors, 0 already staged; 1171200 bytes received") {
		t.Fatalf("stage --pp 2: rc %d: %q %s", rc, out, errs)
	}
	var o, e bytes.Buffer
	if rc := run([]string{"generate", "-m", filepath.Join(dir, "a"), "-n", "2"}, &o, &e); rc == 0 ||
		!strings.Contains(e.String(), "was staged for PP=2 x TP=1, layer split 2,3 (2 ranks); this job is PP=1 x TP=1: run with -n 2 --pp 2") {
		t.Errorf("one rank from a PP=2 copy: rc %d: %s", rc, e.String())
	}
	e.Reset()
	if rc := run([]string{"generate", "-m", filepath.Join(dir, "a"), "-n", "2", "--pp", "2"}, &o, &e); rc == 0 || !strings.Contains(e.String(), "--pp 2 does not divide the job's 1 ranks") {
		t.Errorf("--pp 2 on one rank from a staged copy: rc %d: %s", rc, e.String())
	}
	if out, errs, rc := stageOut("--to", filepath.Join(dir, "b"), "--pp", "2", "--tp", "1", "--mem", "3G,1G"); rc != 0 || !strings.Contains(out, "layer split 4,1 (in proportion to the stages' memory)") {
		t.Errorf("stage --pp 2 --mem 3G,1G: rc %d: %q %s", rc, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pp", "2", "--tp", "1", "--layer-split", "2,2"}, "want 2 stages of the model's 5 layers"},
		{[]string{"--layer-split", "2,3"}, "--layer-split 2,3 without --pp"},
		{[]string{"--pp", "2", "--tp", "1", "--mem", "1G,2G,3G"}, "one per rank of the loading job (2 ranks)"},
		{[]string{"--pp", "6", "--tp", "1"}, "6 pipeline stages for 5 layers"},
		{[]string{"--pp", "2"}, "--pp 2 does not divide the 1 staging ranks: give --tp"},
		{[]string{"--pp", "0"}, "--pp 0: want >= 1"},
		{[]string{"--pp", "2", "--tp", "3", "--layer-split", "2,3"}, "tensor-parallel degree 3 does not divide"},
	} {
		to := filepath.Join(dir, "bad")
		_, errs, rc := stageOut(append([]string{"--to", to}, c.args...)...)
		if rc == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("stage %v: rc %d: %s, want %q", c.args, rc, errs, c.want)
		}
		if _, err := os.Stat(filepath.Join(to, "model.gguf")); err == nil {
			t.Errorf("stage %v wrote a copy", c.args)
		}
	}
}
