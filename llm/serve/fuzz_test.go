package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// fuzzServer is a one-rank server whose engine runs until the fuzz test ends.
func fuzzServer(f *testing.F) *Server {
	file, err := gguf.Open(storiesPath(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { file.Close() })
	m, err := model.Load(file, model.Options{Context: 128})
	if err != nil {
		f.Fatal(err)
	}
	tok, err := model.LoadTokenizer(file)
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(nil, m, tok, nil, Config{MaxBody: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.eng.run(ctx) }()
	f.Cleanup(func() { cancel(); <-done })
	return s
}

// Any request body to either endpoint gets 200 or a 4xx with OpenAI's error object: never a
// 5xx, a panic or a hang.
func FuzzRequest(f *testing.F) {
	s := fuzzServer(f)
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`,
		`{"messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"max_tokens":2}`,
		`{"prompt":"Once upon a time","max_tokens":3,"temperature":0.5,"seed":1,"stop":["a"]}`,
		`{"prompt":[1,2,3],"max_tokens":2,"top_p":0.5,"top_k":3,"min_p":0.1}`,
		`{"prompt":"Once","max_tokens":3,"n":2,"logprobs":2}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"n":2,"logprobs":true,"top_logprobs":3,"stream":true}`,
		`{"prompt":"Once","max_tokens":3,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}}`,
		`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","max_tokens":3}`,
		`{"prompt":"x","max_tokens":"2"}`, `{"messages":[]}`, `[`, ``, `null`, `{"prompt":["a","b"]}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		// Bound the work of one input: a request that validates generates a few tokens, in
		// at most two choices.
		if strings.Contains(body, "max_tokens") || strings.Contains(body, `"n"`) || len(body) > 1<<17 {
			var probe map[string]any
			if json.Unmarshal([]byte(body), &probe) == nil {
				probe["max_tokens"] = 4
				if n, ok := probe["n"].(float64); ok && n > 2 {
					probe["n"] = 2
				}
				b, _ := json.Marshal(probe)
				body = string(b)
			}
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error *struct{ Message, Type, Code string } `json:"error"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code == "" {
				t.Fatalf("%s %q: %d without an error object: %s", path, body, rec.Code, rec.Body.Bytes())
			}
		default:
			t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code == http.StatusOK && bytes.Contains(rec.Body.Bytes(), []byte(`"error"`)) {
			t.Fatalf("%s %q: error inside a 200: %s", path, body, rec.Body.Bytes())
		}
	})
}

// decodePlan rejects every malformed plan with an error (the plan crosses the network).
func FuzzDecodePlan(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
		2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0, 7, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		plan := make([]int32, len(b)/4)
		for i := range plan {
			plan[i] = int32(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		seqs, modes, ops, err := decodePlan(plan)
		if err != nil {
			return
		}
		if len(ops)%5 != 0 {
			t.Fatalf("accepted %v with %d words of block operations", plan, len(ops))
		}
		n := 3 + 4*len(seqs) + len(ops)
		for i, q := range seqs {
			if len(q.Tokens) < 1 || modes[i] < rowNone || modes[i] > rowSample || q.Logits != (modes[i] != rowNone) {
				t.Fatalf("accepted %v: sequence %d %+v mode %d", plan, i, q, modes[i])
			}
			n += len(q.Tokens)
		}
		if n != len(plan) {
			t.Fatalf("accepted %v with %d words used", plan, n)
		}
	})
}

// cutStop never sends text past a stop sequence and never loses text.
func FuzzCutStop(f *testing.F) {
	f.Add("hello world", "wor", "xyz", false)
	f.Add("abc", "c", "bcd", true)
	f.Fuzz(func(t *testing.T, text, s1, s2 string, final bool) {
		stops := []string{}
		for _, s := range []string{s1, s2} {
			if s != "" {
				stops = append(stops, s)
			}
		}
		out, held, stopped := cutStop(text, stops, final)
		if stopped {
			if !strings.HasPrefix(text, out) || held != "" {
				t.Fatalf("cutStop(%q, %q): %q %q", text, stops, out, held)
			}
			rest := text[len(out):]
			hit := false
			for _, s := range stops {
				hit = hit || strings.HasPrefix(rest, s)
			}
			if !hit {
				t.Fatalf("cutStop(%q, %q) stopped at %q", text, stops, rest)
			}
			return
		}
		if out+held != text || (final && held != "") {
			t.Fatalf("cutStop(%q, %q, %v): %q + %q", text, stops, final, out, held)
		}
		for _, s := range stops {
			if strings.Contains(text, s) {
				t.Fatalf("cutStop(%q, %q) missed %q", text, stops, s)
			}
		}
	})
}

// Any body to /v1/messages gets 200 or a 4xx with Anthropic's error object: never a 5xx, a
// panic or a hang.
func FuzzMessages(f *testing.F) {
	s := fuzzServer(f)
	tools := `"tools":[{"name":"f","description":"d","input_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}]`
	for _, seed := range []string{
		`{"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,"system":[{"type":"text","text":"x"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true}`,
		`{"max_tokens":4,` + tools + `,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,` + tools + `,"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,` + tools + `,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"2"},{"type":"text","text":"and?"}]}]}`,
		`{"max_tokens":4,` + tools + `,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":[{"type":"text","text":"2"}],"is_error":true}]}]}`,
		`{"max_tokens":4,` + tools + `,"tool_choice":{"type":"tool","name":"g"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,"tools":[{"name":"f","input_schema":{"type":"string","pattern":"a+"}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":4,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"x"}]},{"role":"user","content":"hi"}]}`,
		`{"messages":[]}`, `[`, ``, `null`, `{"max_tokens":"2"}`,
	} {
		f.Add(seed)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "max_tokens") || len(body) > 1<<17 {
			var probe map[string]any
			if json.Unmarshal([]byte(body), &probe) == nil {
				probe["max_tokens"] = 4
				b, _ := json.Marshal(probe)
				body = string(b)
			}
		}
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusOK:
			if bytes.Contains(rec.Body.Bytes(), []byte(`"type":"error"`)) {
				t.Fatalf("%q: error inside a 200: %s", body, rec.Body.Bytes())
			}
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Type  string                          `json:"type"`
				Error *struct{ Type, Message string } `json:"error"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Type != "error" || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%q: %d without Anthropic's error object: %s", body, rec.Code, rec.Body.Bytes())
			}
		default:
			t.Fatalf("%q: status %d: %s", body, rec.Code, rec.Body.Bytes())
		}
	})
}
