package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// ppReply is a completion's text and its prompt tokens taken from the cache.
type ppReply struct {
	Choices []struct {
		Text string `json:"text"`
	} `json:"choices"`
	Usage struct {
		Details struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func ppRequest(prompt string, seed int) map[string]any {
	req := map[string]any{"prompt": prompt, "max_tokens": 32, "temperature": 0}
	if seed > 0 {
		req["temperature"], req["top_p"], req["seed"] = 0.9, 0.9, seed
	}
	return req
}

func (ts *testServer) ppComplete(t *testing.T, req map[string]any) (ppReply, error) {
	code, _, body := ts.post(t, "/v1/completions", req)
	var r ppReply
	if code != 200 || json.Unmarshal(body, &r) != nil || len(r.Choices) != 1 {
		return r, fmt.Errorf("%d %s", code, body)
	}
	return r, nil
}

// A pipeline keeps several steps in flight: eight requests at once (greedy and seeded
// sampling, streamed or not) each get the reply of one rank, at PP = 2 and 4 and at PP 2 x TP 2;
// the steps in flight reach more than one, which synchronous steps (PipelineSync, run too)
// never do; the prompt cache and /metrics still work.
func TestPipelineOverlap(t *testing.T) {
	prompts := []string{"Once upon a time", "The cat", "Lily and Ben went to the park", "One day"}
	one := startServer(t, serverOpts{ranks: 1, cfg: Config{Slots: 4}})
	greedy := make([]string, len(prompts))
	seeded := make([]string, len(prompts))
	for i, p := range prompts {
		ids, _ := one.tok.Encode(p, true, true)
		greedy[i] = reference(t, ids, 32)
		r, err := one.ppComplete(t, ppRequest(p, 40+i))
		if err != nil {
			t.Fatal(err)
		}
		seeded[i] = r.Choices[0].Text
	}
	for _, c := range []struct {
		name      string
		ranks, pp int
		sync      bool
	}{
		{"PP=2", 2, 2, false},
		{"PP=4", 4, 4, false},
		{"PP=2xTP=2", 4, 2, false},
		{"PP=2/sync", 2, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, serverOpts{ranks: c.ranks, pp: c.pp, cfg: Config{Slots: 4, Batch: 16, Metrics: true, PipelineSync: c.sync}})
			var wg sync.WaitGroup
			errs := make(chan string, 2*len(prompts))
			for i := 0; i < 2*len(prompts); i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k, seed, want := i%len(prompts), 0, greedy[i%len(prompts)]
					if i >= len(prompts) {
						seed, want = 40+k, seeded[k]
					}
					req := ppRequest(prompts[k], seed)
					var got string
					if i%2 == 0 {
						got = ts.stream(t, "/v1/completions", req).text
					} else {
						r, err := ts.ppComplete(t, req)
						if err != nil {
							errs <- fmt.Sprintf("request %d: %v", i, err)
							return
						}
						got = r.Choices[0].Text
					}
					if got != want {
						errs <- fmt.Sprintf("request %d (%q, seed %d): %q, want %q", i, prompts[k], seed, got, want)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			e := ts.srv.eng
			e.mu.Lock()
			most := e.maxInFlight
			e.mu.Unlock()
			switch {
			case c.sync && most != 1:
				t.Errorf("synchronous steps: %d in flight at once", most)
			case !c.sync && (most < 2 || most > c.pp):
				t.Errorf("%d steps in flight at most with 8 clients, want 2..%d", most, c.pp)
			}
			t.Logf("at most %d steps in flight", most)
			// A prompt asked twice more: the second time (at least) it is served from the slot's
			// cache (the first may find its slots taken by other prompts since), with the same reply.
			ids, _ := ts.tok.Encode(prompts[2], true, true)
			for k := 0; k < 2; k++ {
				r, err := ts.ppComplete(t, ppRequest(prompts[2], 0))
				if err != nil {
					t.Fatal(err)
				}
				if r.Choices[0].Text != greedy[2] || (k == 1 && r.Usage.Details.Cached != len(ids)-1) {
					t.Errorf("repeated prompt: %q with %d of %d tokens cached, want %q", r.Choices[0].Text, r.Usage.Details.Cached, len(ids), greedy[2])
				}
			}
			if !waitFor(2*time.Second, func() bool { a, w := ts.srv.Load(); return a == 0 && w == 0 }) {
				a, w := ts.srv.Load()
				t.Errorf("after all requests: %d slots busy, %d waiting", a, w)
			}
			_, m := ts.get(t, "/metrics")
			for _, s := range []string{"gorun_llm_steps_in_flight 0", "gorun_llm_generated_tokens_total"} {
				if !strings.Contains(string(m), s) {
					t.Errorf("/metrics lacks %q", s)
				}
			}
			if none := strings.Contains(string(m), "gorun_llm_overlapped_steps_total 0\n"); none != c.sync {
				t.Errorf("/metrics: overlapped steps counted %v, synchronous %v", !none, c.sync)
			}
		})
	}
}

// A client that leaves while its steps are in the pipeline frees its slot once they come
// back, and the server goes on serving the other clients.
func TestPipelineDisconnect(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2, pp: 2, cfg: Config{Slots: 2, Metrics: true}, setup: func(rank int, s *Server) {
		s.eng.beforeStep = func() { time.Sleep(10 * time.Millisecond) }
	}})
	ctx, cancel := context.WithCancel(context.Background())
	body := strings.NewReader(`{"prompt":"Once upon a time","max_tokens":120,"temperature":0,"stream":true}`)
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", body)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Another client decodes meanwhile, so that steps overlap.
	other := make(chan string, 1)
	go func() {
		r, err := ts.ppComplete(t, ppRequest("The cat", 0))
		if err != nil {
			other <- err.Error()
			return
		}
		other <- r.Choices[0].Text
	}()
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			i++
		}
	}
	cancel()
	resp.Body.Close()
	ids, _ := ts.tok.Encode("The cat", true, true)
	if got, want := <-other, reference(t, ids, 32); got != want {
		t.Errorf("the other client: %q, want %q", got, want)
	}
	if !waitFor(2*time.Second, func() bool { a, _ := ts.srv.Load(); return a == 0 }) {
		t.Fatalf("slots still busy after the client left")
	}
	_, m := ts.get(t, "/metrics")
	if !strings.Contains(string(m), "gorun_llm_cancelled_requests_total 1") {
		t.Errorf("cancelled requests not counted")
	}
	code, _, out := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})
	if code != 200 || !strings.Contains(string(out), ", there was a") {
		t.Errorf("after a disconnect: %d %s", code, out)
	}
}
