package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/llm/sample"
)

var greedyParams = sample.Params{}

// llama.cpp's greedy continuation of "Once upon a time" with this model (the reference file's
// generated_text, 32 tokens).
const onceUponATime = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"

// Each endpoint, streamed and not, at TP = 1 and 2: greedy text equals model.Generate's (what
// `llm generate` prints) and llama.cpp's reference.
func TestEndpointsGreedy(t *testing.T) {
	for _, ranks := range []int{1, 2} {
		t.Run(fmt.Sprintf("TP=%d", ranks), func(t *testing.T) {
			ts := startServer(t, serverOpts{ranks: ranks, cfg: Config{Metrics: true}})
			prompt, _ := ts.tok.Encode("Once upon a time", true, true)
			want := reference(t, prompt, 32)
			if want != onceUponATime {
				t.Fatalf("model.Generate: %q, llama.cpp %q", want, onceUponATime)
			}
			req := map[string]any{"model": "stories", "prompt": "Once upon a time", "max_tokens": 32, "temperature": 0}
			code, _, body := ts.post(t, "/v1/completions", req)
			var c completion
			if code != 200 || json.Unmarshal(body, &c) != nil {
				t.Fatalf("completions: %d %s", code, body)
			}
			if c.Object != "text_completion" || c.Model != "stories" || len(c.Choices) != 1 || c.Choices[0].Text != want ||
				*c.Choices[0].FinishReason != "length" || c.Usage.Prompt != len(prompt) || c.Usage.Completion != 32 || c.Usage.Total != 32+len(prompt) {
				t.Errorf("completions: %s", body)
			}
			s := ts.stream(t, "/v1/completions", req)
			if s.text != want || s.finish != "length" || !s.done || s.usage.Usage.Completion != 32 || len(s.chunks) < 10 {
				t.Errorf("streamed completions: %q finish %q done %v, %d chunks", s.text, s.finish, s.done, len(s.chunks))
			}

			// Chat: the llama2 fallback template (the file has none); the same rendering
			// through model.Generate gives the expected text.
			msgs := []any{map[string]any{"role": "system", "content": "You tell stories."}, map[string]any{"role": "user", "content": "Tell me about a cat."}}
			rendered, err := ts.srv.tmpl.Render([]Message{{"system", "You tell stories."}, {"user", "Tell me about a cat."}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(rendered, "<s>[INST] <<SYS>>\nYou tell stories.\n<</SYS>>\n\nTell me about a cat. [/INST]") {
				t.Fatalf("rendered %q", rendered)
			}
			ids, _ := ts.tok.Encode(rendered, false, true)
			wantChat := reference(t, ids, 24)
			creq := map[string]any{"model": "stories", "messages": msgs, "max_tokens": 24, "temperature": 0}
			code, _, body = ts.post(t, "/v1/chat/completions", creq)
			c = completion{}
			if code != 200 || json.Unmarshal(body, &c) != nil {
				t.Fatalf("chat: %d %s", code, body)
			}
			if c.Object != "chat.completion" || c.Choices[0].Message.Role != "assistant" || c.Choices[0].Message.Content != wantChat ||
				c.Usage.Prompt != len(ids) {
				t.Errorf("chat: %s, want content %q and %d prompt tokens", body, wantChat, len(ids))
			}
			s = ts.stream(t, "/v1/chat/completions", creq)
			if s.text != wantChat || !s.done || s.chunks[0].Choices[0].Delta.Role == nil || *s.chunks[0].Choices[0].Delta.Role != "assistant" ||
				s.chunks[0].Object != "chat.completion.chunk" {
				t.Errorf("streamed chat: %q (want %q), done %v, first chunk %+v", s.text, wantChat, s.done, s.chunks[0])
			}
			t.Logf("chat answer: %q", wantChat)

			code, body = ts.get(t, "/v1/models")
			var models struct {
				Object string `json:"object"`
				Data   []struct {
					ID, Object string
					Meta       map[string]any
				}
			}
			if code != 200 || json.Unmarshal(body, &models) != nil || models.Object != "list" || len(models.Data) != 1 ||
				models.Data[0].ID != "stories" || models.Data[0].Meta["tensor_parallel"] != float64(ranks) {
				t.Errorf("models: %d %s", code, body)
			}
			if code, body = ts.get(t, "/v1/models/stories"); code != 200 || !strings.Contains(string(body), `"id":"stories"`) {
				t.Errorf("model: %d %s", code, body)
			}
			if code, body = ts.get(t, "/v1/models/gpt-4"); code != http.StatusNotFound || errorOf(t, body).Error.Code != "model_not_found" {
				t.Errorf("unknown model: %d %s", code, body)
			}
			code, body = ts.get(t, "/health")
			if code != 200 || !strings.Contains(string(body), `"status":"ok"`) {
				t.Errorf("health: %d %s", code, body)
			}
			code, body = ts.get(t, "/metrics")
			for _, series := range []string{`gorun_llm_requests_total{code="200",endpoint="chat"} 2`, "gorun_llm_generated_tokens_total 112",
				"gorun_llm_time_to_first_token_seconds_count 4", "gorun_llm_request_tokens_per_second_count 4", "gorun_llm_queue_depth 0",
				"gorun_llm_allreduce_seconds_total", "gorun_llm_prompt_tokens_total"} {
				if !strings.Contains(string(body), series) {
					t.Errorf("metrics: no %q in\n%s", series, body)
				}
			}
			code, body = ts.get(t, "/")
			if code != 200 || !strings.Contains(string(body), `<script src="/chat.js">`) {
				t.Errorf("chat page: %d %s", code, body)
			}
			if code, body = ts.get(t, "/chat.js"); code != 200 || !strings.Contains(string(body), "/v1/chat/completions") {
				t.Errorf("chat.js: %d", code)
			}
		})
	}
}

func TestMetricsOff(t *testing.T) {
	ts := startServer(t, serverOpts{})
	if code, _ := ts.get(t, "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics without --metrics: %d", code)
	}
}

// More requests than slots at once, at TP = 2, streamed and not, with four prompts: every
// answer equals the prompt's one-sequence greedy text, and afterwards every slot is free and
// no goroutine is left behind.
func TestConcurrent(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2, cfg: Config{Slots: 6, Batch: 16}})
	prompts := []string{"Once upon a time", "The cat", "Lily and Ben went to the park", "One day"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		ids, _ := ts.tok.Encode(p, true, true)
		want[i] = reference(t, ids, 40)
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % len(prompts)
			req := map[string]any{"prompt": prompts[k], "max_tokens": 40, "temperature": 0}
			var got string
			if i%2 == 0 {
				s := ts.stream(t, "/v1/completions", req)
				got = s.text
			} else {
				code, _, body := ts.post(t, "/v1/completions", req)
				var c completion
				if code != 200 || json.Unmarshal(body, &c) != nil {
					errs <- fmt.Sprintf("request %d: %d %s", i, code, body)
					return
				}
				got = c.Choices[0].Text
			}
			if got != want[k] {
				errs <- fmt.Sprintf("request %d (%q): %q, want %q", i, prompts[k], got, want[k])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if !waitFor(2*time.Second, func() bool { a, w := ts.srv.Load(); return a == 0 && w == 0 }) {
		a, w := ts.srv.Load()
		t.Errorf("after all requests: %d slots busy, %d waiting", a, w)
	}
	if !waitFor(3*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

// Sampling: the same seed gives the same text; stop sequences cut the text and end with
// finish_reason "stop"; max_tokens ends with "length".
func TestSamplingStopAndLength(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2})
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0.9, "top_p": 0.9, "seed": 42}
	var texts []string
	for i := 0; i < 3; i++ {
		code, _, body := ts.post(t, "/v1/completions", req)
		var c completion
		if code != 200 || json.Unmarshal(body, &c) != nil {
			t.Fatalf("%d %s", code, body)
		}
		texts = append(texts, c.Choices[0].Text)
	}
	if texts[0] != texts[1] || texts[0] != texts[2] {
		t.Errorf("seed 42 gave different texts: %q", texts)
	}
	req["seed"] = 43
	code, _, body := ts.post(t, "/v1/completions", req)
	if code != 200 || strings.Contains(string(body), texts[0]) {
		t.Errorf("seed 43 gave seed 42's text: %s", body)
	}
	t.Logf("seed 42: %q", texts[0])

	for _, stop := range []any{"Lily", []string{"park", "Lily"}} {
		sreq := map[string]any{"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0, "stop": stop}
		want := ", there was a little girl named "
		code, _, body := ts.post(t, "/v1/completions", sreq)
		var c completion
		if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Text != want || *c.Choices[0].FinishReason != "stop" {
			t.Errorf("stop %v: %d %s", stop, code, body)
		}
		s := ts.stream(t, "/v1/completions", sreq)
		if s.text != want || s.finish != "stop" {
			t.Errorf("streamed stop %v: %q %q", stop, s.text, s.finish)
		}
	}
	code, _, body = ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 3, "temperature": 0})
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Text != ", there was" || *c.Choices[0].FinishReason != "length" || c.Usage.Completion != 3 {
		t.Errorf("max_tokens 3: %s", body)
	}
	// Without max_tokens a request may fill its slot: it ends with "length" or "stop".
	code, _, body = ts.post(t, "/v1/completions", map[string]any{"prompt": []int{1, 403, 407}, "temperature": 0})
	if code != 200 || !strings.Contains(string(body), `"finish_reason"`) {
		t.Errorf("no max_tokens: %d %s", code, body)
	}
}

// A client that leaves mid-stream frees its KV slot at the next step, long before its
// request would have ended.
func TestDisconnectFreesSlot(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2, cfg: Config{Slots: 2, Metrics: true}, setup: func(rank int, s *Server) {
		s.eng.beforeStep = func() { time.Sleep(20 * time.Millisecond) } // 120 tokens: over 2 s
	}})
	ctx, cancel := context.WithCancel(context.Background())
	body := strings.NewReader(`{"prompt":"Once upon a time","max_tokens":120,"temperature":0,"stream":true}`)
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", body)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			i++
		}
	}
	if a, _ := ts.srv.Load(); a != 1 {
		t.Fatalf("%d slots busy while streaming, want 1", a)
	}
	left := time.Now()
	cancel()
	resp.Body.Close()
	if !waitFor(time.Second, func() bool { a, _ := ts.srv.Load(); return a == 0 }) {
		t.Fatalf("slot still busy %v after the client left", time.Since(left))
	}
	t.Logf("slot freed %v after the client left", time.Since(left))
	_, m := ts.get(t, "/metrics")
	// The slot was freed by the cancellation, not by the request's end.
	if !strings.Contains(string(m), "gorun_llm_cancelled_requests_total 1") {
		t.Errorf("cancelled requests not counted")
	}
	// The server goes on serving.
	code, _, out := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})
	if code != 200 || !strings.Contains(string(out), ", there was a") {
		t.Errorf("after a disconnect: %d %s", code, out)
	}
}

// A full queue answers 429 with Retry-After and OpenAI's error object.
func TestQueueFull(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{Slots: 1, Queue: 1}, setup: func(rank int, s *Server) {
		s.eng.beforeStep = func() { time.Sleep(20 * time.Millisecond) } // a request: over 1 s
	}})
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 60, "temperature": 0})
			codes <- code
		}()
		// The first takes the slot, the second waits.
		if !waitFor(2*time.Second, func() bool { a, w := ts.srv.Load(); return a+w == i+1 }) {
			t.Fatalf("request %d not admitted", i)
		}
	}
	code, h, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("third request: %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	if e := errorOf(t, body); e.Error.Code != "queue_full" {
		t.Errorf("code %q", e.Error.Code)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("queued request: %d", c)
		}
	}
}

// Every bad input of the issue gets 400 (413 for a body over the limit) with OpenAI's error
// object naming what was wrong.
func TestBadInput(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{MaxBody: 4096}})
	user := func(s string) []any { return []any{map[string]any{"role": "user", "content": s}} }
	long := strings.Repeat("the cat sat on the mat ", 40)
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		code, want string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"messages": [`, 400, "invalid_json", "malformed JSON"},
		{"not JSON", "/v1/completions", `hello`, 400, "invalid_json", "malformed JSON"},
		{"empty body", "/v1/completions", ``, 400, "invalid_json", "empty"},
		{"max_tokens a string", "/v1/completions", `{"prompt":"hi","max_tokens":"ten"}`, 400, "invalid_type", `field "max_tokens"`},
		{"temperature a string", "/v1/chat/completions", map[string]any{"messages": user("hi"), "temperature": "hot"}, 400, "invalid_type", `field "temperature"`},
		{"messages an object", "/v1/chat/completions", `{"messages":{"role":"user"}}`, 400, "invalid_type", `field "messages"`},
		{"stream a string", "/v1/completions", `{"prompt":"hi","stream":"yes"}`, 400, "invalid_type", `field "stream"`},
		{"no messages", "/v1/chat/completions", `{"model":"stories"}`, 400, "invalid_value", "messages is empty"},
		{"empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_value", "messages is empty"},
		{"empty content", "/v1/chat/completions", map[string]any{"messages": user("  ")}, 400, "invalid_value", "last message is empty"},
		{"content a number", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, 400, "invalid_type", "messages[0].content"},
		{"bad role", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"hi"}]}`, 400, "invalid_value", `"wizard"`},
		{"no prompt", "/v1/completions", `{"max_tokens":3}`, 400, "invalid_value", "prompt is missing"},
		{"empty prompt", "/v1/completions", `{"prompt":""}`, 400, "invalid_value", "prompt is empty"},
		{"prompt token outside vocab", "/v1/completions", `{"prompt":[1,9999]}`, 400, "invalid_value", "outside the vocabulary"},
		{"prompt longer than context", "/v1/completions", map[string]any{"prompt": long}, 400, "context_length_exceeded", "context per request is 128"},
		{"chat longer than context", "/v1/chat/completions", map[string]any{"messages": user(long)}, 400, "context_length_exceeded", "context per request is 128"},
		{"max_tokens beyond context", "/v1/completions", `{"prompt":"Once upon a time","max_tokens":500}`, 400, "context_length_exceeded", "max_tokens = 500"},
		{"max_tokens zero", "/v1/completions", `{"prompt":"Once","max_tokens":0}`, 400, "invalid_value", "max_tokens = 0"},
		{"n = 200", "/v1/completions", `{"prompt":"Once","n":200}`, 400, "invalid_value", "n = 200"},
		{"temperature 5", "/v1/completions", `{"prompt":"Once","temperature":5}`, 400, "invalid_value", "temperature = 5"},
		{"top_p 0", "/v1/completions", `{"prompt":"Once","top_p":0}`, 400, "invalid_value", "top_p = 0"},
		{"stop a number", "/v1/completions", `{"prompt":"Once","stop":7}`, 400, "invalid_type", "stop"},
		{"five stops", "/v1/completions", `{"prompt":"Once","stop":["a","b","c","d","e"]}`, 400, "invalid_value", "at most 4"},
		{"body over the limit", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, 413, "request_too_large", "limit of 4096 bytes"},
	} {
		code, h, body := ts.post(t, c.path, c.body)
		if code != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, code, c.status, body)
			continue
		}
		if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s: content type %q", c.name, h.Get("Content-Type"))
		}
		e := errorOf(t, body)
		if e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %s, want code %q and a message with %q", c.name, body, c.code, c.want)
		}
	}
	// What the error names: the JSON kind wanted, the field (param) at fault.
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		code       string
		param      string
		want       string
	}{
		{"messages a string", "/v1/chat/completions", `{"messages":"hi"}`, 400, "invalid_type", "messages", `field "messages": got a JSON string, want an array`},
		{"messages an object", "/v1/chat/completions", `{"messages":{"role":"user"}}`, 400, "invalid_type", "messages", "got a JSON object, want an array"},
		{"max_tokens a string", "/v1/completions", `{"prompt":"hi","max_tokens":"ten"}`, 400, "invalid_type", "max_tokens", "got a JSON string, want an integer"},
		{"temperature a string", "/v1/completions", `{"prompt":"hi","temperature":"hot"}`, 400, "invalid_type", "temperature", "got a JSON string, want a number"},
		{"stream a number", "/v1/completions", `{"prompt":"hi","stream":1}`, 400, "invalid_type", "stream", "got a JSON number, want a boolean"},
		{"model a number", "/v1/completions", `{"prompt":"hi","model":7}`, 400, "invalid_type", "model", "got a JSON number, want a string"},
		{"prompt longer than context", "/v1/completions", map[string]any{"prompt": long}, 400, "context_length_exceeded", "prompt", "context per request is 128"},
		{"chat longer than context", "/v1/chat/completions", map[string]any{"messages": user(long)}, 400, "context_length_exceeded", "messages", "context per request is 128"},
		{"prompt of token ids longer than context", "/v1/completions", map[string]any{"prompt": make([]int, 200)}, 400, "context_length_exceeded", "prompt", "the prompt has 200 tokens"},
		{"unknown model, chat", "/v1/chat/completions", map[string]any{"model": "gpt-4", "messages": user("hi")}, 404, "model_not_found", "model", `"gpt-4" does not exist; this server serves "stories"`},
		{"unknown model, completions", "/v1/completions", `{"model":"gpt-4","prompt":"hi"}`, 404, "model_not_found", "model", `"gpt-4" does not exist`},
	} {
		code, _, body := ts.post(t, c.path, c.body)
		if code != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, code, c.status, body)
			continue
		}
		e := errorOf(t, body)
		if e.Error.Code != c.code || e.Error.Param == nil || *e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %s, want code %q, param %q and a message with %q", c.name, body, c.code, c.param, c.want)
		}
	}
	// The model's own name, or none, is accepted.
	for _, model := range []string{`"model":"stories",`, `"model":"",`, ``} {
		code, _, body := ts.post(t, "/v1/completions", `{`+model+`"prompt":"Once upon a time","max_tokens":3,"temperature":0}`)
		if code != 200 || !strings.Contains(string(body), `"model":"stories"`) {
			t.Errorf("%s: %d %s", model, code, body)
		}
	}
	// Wrong methods and paths.
	if code, _ := ts.get(t, "/v1/chat/completions"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET on chat completions: %d", code)
	}
	if code, _ := ts.get(t, "/v1/nothing"); code != http.StatusNotFound {
		t.Errorf("unknown path: %d", code)
	}
	// The server still works.
	code, _, body := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":3,"temperature":0,"unknown_field":{"x":1}}`)
	if code != 200 || !strings.Contains(string(body), ", there was") {
		t.Errorf("after bad input: %d %s", code, body)
	}
}

// A rank that dies mid-generation: the requests in flight get an error (streamed: an error
// event; whole: a 500 error object), /health turns 503, and Serve returns the error.
func TestRankFailure(t *testing.T) {
	// TP=2, and two pipeline stages (overlapped steps)
	for _, pp := range []int{1, 2} {
		t.Run(fmt.Sprintf("PP=%d", pp), func(t *testing.T) {
			ts := startServer(t, serverOpts{ranks: 2, pp: pp, grace: 3 * time.Second, setup: func(rank int, s *Server) {
				s.eng.beforeStep = func() { time.Sleep(5 * time.Millisecond) }
				if rank == 1 {
					s.eng.failAfter = 20
				}
			}})
			var wg sync.WaitGroup
			wg.Add(1)
			var whole []byte
			var wholeCode int
			go func() {
				defer wg.Done()
				wholeCode, _, whole = ts.post(t, "/v1/completions", map[string]any{"prompt": "The cat", "max_tokens": 100, "temperature": 0})
			}()
			s := ts.stream(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0})
			wg.Wait()
			if s.errMsg == "" || s.done || s.finish != "" {
				t.Errorf("streamed request: error %q, done %v, finish %q, text %q", s.errMsg, s.done, s.finish, s.text)
			}
			t.Logf("stream error event: %s", s.errMsg)
			if wholeCode != http.StatusInternalServerError {
				t.Errorf("whole request: %d %s", wholeCode, whole)
			} else if e := errorOf(t, whole); e.Error.Code != "rank_failure" {
				t.Errorf("whole request error: %s", whole)
			}
			code, body := ts.get(t, "/health")
			if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "rank 1") {
				t.Errorf("health after the failure: %d %s", code, body)
			}
			code, _, body = ts.post(t, "/v1/completions", map[string]any{"prompt": "hi"})
			if code != http.StatusInternalServerError {
				t.Errorf("new request after the failure: %d %s", code, body)
			}
			select {
			case err := <-ts.done:
				if err == nil || !strings.Contains(err.Error(), "injected failure") {
					t.Errorf("Serve returned %v", err)
				}
				ts.done <- nil
			case <-time.After(10 * time.Second):
				t.Errorf("Serve did not return after the failure")
			}
		})
	}
}
