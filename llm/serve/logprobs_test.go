package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// lpEntry is one token of a chat choice's logprobs.content.
type lpEntry struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
	Top     []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	} `json:"top_logprobs"`
}

type chatLP struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Logprobs *struct {
			Content []lpEntry `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
}

func fromBytes(b []int) string {
	s := make([]byte, len(b))
	for i, v := range b {
		s[i] = byte(v)
	}
	return string(s)
}

// refModel is a one-rank model that the tests step token by token for reference logits.
type refModel struct {
	m      *model.Model
	pieces []string
}

func newRefModel(t *testing.T, ts *testServer) *refModel {
	t.Helper()
	f, err := gguf.Open(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.Load(f, model.Options{Context: 128})
	if err != nil {
		t.Fatal(err)
	}
	r := &refModel{m: m, pieces: make([]string, ts.tok.NumTokens())}
	for i := range r.pieces {
		r.pieces[i] = ts.tok.TokenPiece(int32(i))
	}
	return r
}

// logSoftmax64 is the reference: the log-softmax of the logits in float64.
func logSoftmax64(logits []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = float64(v) - mx - math.Log(sum)
	}
	return out
}

// lpTol allows for float32 sums in another order: the server's batched products, split over
// two ranks, against one rank's Forward of one token at a time.
const lpTol = 1e-2

// check feeds the prompt, then walks the reported tokens: at each position the reported
// logprob must equal the reference's for a token with the reported bytes (that token is fed
// next), and the alternatives must be the reference's k most likely with their logprobs.
// greedy also requires each token to be the most likely one.
func (r *refModel) check(t *testing.T, what string, prompt []int32, entries []lpEntry, k int, greedy bool) {
	t.Helper()
	r.m.Reset()
	if err := r.m.Forward(prompt); err != nil {
		t.Fatal(err)
	}
	for pos, e := range entries {
		logits, err := r.m.Logits()
		if err != nil {
			t.Fatal(err)
		}
		ref := logSoftmax64(logits)
		piece := fromBytes(e.Bytes)
		id, best := int32(-1), math.Inf(1)
		for i, p := range r.pieces {
			if d := math.Abs(ref[i] - e.Logprob); p == piece && d < best {
				id, best = int32(i), d
			}
		}
		if id < 0 || best > lpTol {
			t.Fatalf("%s: token %d %q logprob %g: no token with those bytes has that reference logprob (nearest off by %g)", what, pos, piece, e.Logprob, best)
		}
		if e.Token != strings.ToValidUTF8(piece, "\uFFFD") && e.Token != piece {
			t.Errorf("%s: token %d: token %q, bytes %q", what, pos, e.Token, piece)
		}
		order := make([]int, len(ref))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return ref[order[a]] > ref[order[b]] })
		if greedy && math.Abs(ref[order[0]]-ref[id]) > lpTol {
			t.Errorf("%s: token %d %q (logprob %g) is not the most likely (%g)", what, pos, piece, ref[id], ref[order[0]])
		}
		if len(e.Top) != k {
			t.Fatalf("%s: token %d has %d alternatives, want %d", what, pos, len(e.Top), k)
		}
		for a, alt := range e.Top {
			if math.Abs(alt.Logprob-ref[order[a]]) > lpTol {
				t.Errorf("%s: token %d alternative %d logprob %g, reference %g", what, pos, a, alt.Logprob, ref[order[a]])
			}
			found := false
			for i, p := range r.pieces {
				if p == fromBytes(alt.Bytes) && math.Abs(ref[i]-alt.Logprob) <= lpTol {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: token %d alternative %q logprob %g matches no token", what, pos, fromBytes(alt.Bytes), alt.Logprob)
			}
		}
		if err := r.m.Forward([]int32{id}); err != nil {
			t.Fatal(err)
		}
	}
}

// chatPrompt tokenizes messages as the server does.
func chatPrompt(t *testing.T, ts *testServer, msgs []Message) []int32 {
	t.Helper()
	text, err := ts.srv.tmpl.Render(msgs)
	if err != nil {
		t.Fatal(err)
	}
	addSpecial := ts.srv.tmpl.BOSText() == "" || !strings.HasPrefix(text, ts.srv.tmpl.BOSText())
	ids, err := ts.tok.Encode(text, addSpecial, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestLogprobs(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2})
	ref := newRefModel(t, ts)
	msgs := []Message{{"user", "Tell me about a dog."}}
	prompt := chatPrompt(t, ts, msgs)
	wire := []any{map[string]any{"role": "user", "content": "Tell me about a dog."}}

	for _, tc := range []struct {
		name string
		req  map[string]any
		k    int
	}{
		{"greedy", map[string]any{"messages": wire, "max_tokens": 24, "temperature": 0, "logprobs": true, "top_logprobs": 5}, 5},
		{"sampled", map[string]any{"messages": wire, "max_tokens": 24, "temperature": 1.2, "seed": 3, "logprobs": true, "top_logprobs": 3}, 3},
		{"no alternatives", map[string]any{"messages": wire, "max_tokens": 8, "temperature": 0, "logprobs": true}, 0},
	} {
		code, _, body := ts.post(t, "/v1/chat/completions", tc.req)
		var c chatLP
		if code != 200 || json.Unmarshal(body, &c) != nil || len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
			t.Fatalf("%s: %d %s", tc.name, code, body)
		}
		entries := c.Choices[0].Logprobs.Content
		var text strings.Builder
		for _, e := range entries {
			text.WriteString(fromBytes(e.Bytes))
		}
		// The reply's text is the tokens' bytes (a SentencePiece reply may start with the
		// space of its first token).
		if got := text.String(); got != c.Choices[0].Message.Content && strings.TrimPrefix(got, " ") != c.Choices[0].Message.Content {
			t.Errorf("%s: tokens spell %q, content %q", tc.name, got, c.Choices[0].Message.Content)
		}
		ref.check(t, tc.name, prompt, entries, tc.k, tc.name != "sampled")

		// Streamed: the same tokens, spread over the chunks.
		tc.req["stream"] = true
		var streamed []lpEntry
		for _, ch := range streamChoices(t, ts, "/v1/chat/completions", tc.req) {
			if ch.Logprobs != nil {
				streamed = append(streamed, ch.Logprobs.Content...)
			}
		}
		if a, b := mustJSON(streamed), mustJSON(entries); a != b {
			t.Errorf("%s: streamed logprobs differ:\n%s\n%s", tc.name, a, b)
		}
	}
	code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": wire, "max_tokens": 4})
	if code != 200 || !strings.Contains(string(body), `"logprobs":null`) {
		t.Errorf("without logprobs: %d %s", code, body)
	}

	// /v1/completions: the legacy object.
	cprompt, _ := ts.tok.Encode("Once upon a time", true, true)
	code, _, body = ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0, "logprobs": 2})
	var c struct {
		Choices []struct {
			Text     string `json:"text"`
			Logprobs struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []float64            `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(body, &c) != nil || len(c.Choices) != 1 {
		t.Fatalf("completions: %d %s", code, body)
	}
	l := c.Choices[0].Logprobs
	if len(l.Tokens) != 16 || len(l.TokenLogprobs) != 16 || len(l.TopLogprobs) != 16 || len(l.TextOffset) != 16 ||
		strings.Join(l.Tokens, "") != c.Choices[0].Text {
		t.Fatalf("completions logprobs: %s", body)
	}
	var entries []lpEntry
	for i, tokStr := range l.Tokens {
		if l.TextOffset[i] != len(strings.Join(l.Tokens[:i], "")) {
			t.Errorf("text_offset[%d] = %d", i, l.TextOffset[i])
		}
		e := lpEntry{Token: tokStr, Logprob: l.TokenLogprobs[i], Bytes: toInts(tokStr)}
		type alt = struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
			Bytes   []int   `json:"bytes"`
		}
		for s, v := range l.TopLogprobs[i] {
			e.Top = append(e.Top, alt{s, v, toInts(s)})
		}
		sort.Slice(e.Top, func(a, b int) bool { return e.Top[a].Logprob > e.Top[b].Logprob })
		entries = append(entries, e)
	}
	ref.check(t, "completions", cprompt, entries, 2, true)
}

func toInts(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// streamedChoice is a choice of a streamed chunk.
type streamedChoice struct {
	Index int    `json:"index"`
	Text  string `json:"text"`
	Delta struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
	Logprobs     *struct {
		Content []lpEntry `json:"content"`
	} `json:"logprobs"`
}

// streamChoices posts a streaming request and returns every chunk's choice, in order, checking
// that the stream ends with [DONE].
func streamChoices(t *testing.T, ts *testServer, path string, req map[string]any) []streamedChoice {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := ts.client.Post(ts.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []streamedChoice
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []streamedChoice `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("chunk %s (%v)", data, err)
		}
		out = append(out, c.Choices[0])
	}
	if !done {
		t.Fatalf("%s: no [DONE]", path)
	}
	return out
}

func TestChoicesAndSeed(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 1, cfg: Config{Slots: 2}})
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 20, "temperature": 1, "seed": 7, "n": 3}
	code, _, body := ts.post(t, "/v1/completions", req)
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil || len(c.Choices) != 3 {
		t.Fatalf("n = 3: %d %s", code, body)
	}
	prompt, _ := ts.tok.Encode("Once upon a time", true, true)
	distinct := map[string]bool{}
	total := 0
	for i, ch := range c.Choices {
		if ch.Index != i {
			t.Errorf("choice %d has index %d", i, ch.Index)
		}
		// Choice i is what one request with seed 7+i gives.
		one := map[string]any{"prompt": "Once upon a time", "max_tokens": 20, "temperature": 1, "seed": 7 + i}
		code, _, b := ts.post(t, "/v1/completions", one)
		var o completion
		if code != 200 || json.Unmarshal(b, &o) != nil || o.Choices[0].Text != ch.Text {
			t.Errorf("choice %d %q; seed %d alone: %s", i, ch.Text, 7+i, b)
		} else {
			total += o.Usage.Completion
		}
		distinct[ch.Text] = true
	}
	if len(distinct) < 2 {
		t.Errorf("3 sampled choices are all %q", c.Choices[0].Text)
	}
	if c.Usage.Prompt != len(prompt) || c.Usage.Completion != total {
		t.Errorf("usage %+v, want prompt %d completion %d", *c.Usage, len(prompt), total)
	}

	// Chat, streamed: each index's pieces join to the non-streamed choice.
	chat := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hi"}}, "max_tokens": 16, "temperature": 0.8, "seed": 11, "n": 2}
	code, _, body = ts.post(t, "/v1/chat/completions", chat)
	var cc completion
	if code != 200 || json.Unmarshal(body, &cc) != nil || len(cc.Choices) != 2 {
		t.Fatalf("chat n = 2: %d %s", code, body)
	}
	chat["stream"] = true
	texts := make([]string, 2)
	roles, finishes := 0, 0
	for _, ch := range streamChoices(t, ts, "/v1/chat/completions", chat) {
		if ch.Index < 0 || ch.Index > 1 {
			t.Fatalf("chunk index %d", ch.Index)
		}
		texts[ch.Index] += ch.Delta.Content
		if ch.Delta.Role == "assistant" {
			roles++
		}
		if ch.FinishReason != nil {
			finishes++
		}
	}
	for i := range texts {
		if texts[i] != cc.Choices[i].Message.Content {
			t.Errorf("streamed choice %d %q, whole %q", i, texts[i], cc.Choices[i].Message.Content)
		}
	}
	if roles != 2 || finishes != 2 {
		t.Errorf("%d role chunks, %d finish chunks; want 2 and 2", roles, finishes)
	}
}

func TestLogprobsBadInput(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 1, cfg: Config{Queue: 8}})
	msgs := []any{map[string]any{"role": "user", "content": "Hi"}}
	for _, tc := range []struct {
		path  string
		req   map[string]any
		param string
	}{
		{"/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": true, "top_logprobs": 21}, "top_logprobs"},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "top_logprobs": 2}, "top_logprobs"},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": 3}, "logprobs"},
		{"/v1/completions", map[string]any{"prompt": "a", "logprobs": 6}, "logprobs"},
		{"/v1/completions", map[string]any{"prompt": "a", "logprobs": true}, "logprobs"},
		{"/v1/completions", map[string]any{"prompt": "a", "top_logprobs": 1}, "top_logprobs"},
		{"/v1/completions", map[string]any{"prompt": "a", "n": 0}, "n"},
		{"/v1/completions", map[string]any{"prompt": "a", "n": 9}, "n"},
		{"/v1/chat/completions", map[string]any{"messages": msgs, "n": 129}, "n"},
	} {
		code, _, body := ts.post(t, tc.path, tc.req)
		e := errorOf(t, body)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s %v: %d %s", tc.path, tc.req, code, body)
		}
	}
}
