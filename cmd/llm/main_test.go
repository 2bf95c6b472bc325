package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
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
	if rc := run([]string{"info", "-m", p}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "degrees that work: [1 2 4 8]") {
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
}
