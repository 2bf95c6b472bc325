package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// llm serve on the real tiny model, loaded by llm bench-serve at two concurrencies.
func TestServeAndBenchServe(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- serveUntil(ctx, []string{"-m", path, "--port", "0", "--parallel", "4"}, &serveErr, func(a string) { addr <- a })
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v %s", err, serveErr.String())
	}
	// Greedy output equals `llm generate`'s.
	var gen, generr bytes.Buffer
	if rc := run([]string{"generate", "-m", path, "-p", "Once upon a time", "-n", "40", "--quiet"}, &gen, &generr); rc != 0 {
		t.Fatalf("generate: %s", generr.String())
	}
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Once upon a time","max_tokens":40,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct{ Text string }
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || len(c.Choices) != 1 || "Once upon a time"+c.Choices[0].Text+"\n" != gen.String() {
		t.Errorf("serve: %+v %v; llm generate: %q", c, err, gen.String())
	}

	var out, errb bytes.Buffer
	if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "1,4", "-n", "8", "-o", "json"}, &out, &errb); rc != 0 {
		t.Fatalf("bench-serve rc %d: %s", rc, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("bench-serve printed %q", out.String())
	}
	for i, line := range lines {
		var lv serveLevel
		if err := json.Unmarshal([]byte(line), &lv); err != nil {
			t.Fatal(err)
		}
		want := []int{1, 4}[i]
		if lv.Concurrency != want || lv.Errors != 0 || lv.Requests != 4*i+4 || lv.GenTokens != 8*lv.Requests || lv.Throughput <= 0 || lv.TTFTP50Ms <= 0 || lv.Model != "stories260K" {
			t.Errorf("level %d: %+v", i, lv)
		}
	}
	if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "0"}, &out, &errb); rc != 1 {
		t.Errorf("concurrency 0: rc %d", rc)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(serveErr.String(), "stories260K (llama, 1 rank(s)") {
		t.Errorf("serve's banner: %q", serveErr.String())
	}
}
