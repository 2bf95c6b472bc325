package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
	"github.com/gorun-hpc/gorun/llm/tp"
)

// testServer is a server over in-process ranks, listening on a loopback port.
type testServer struct {
	url    string
	srv    *Server   // rank 0's
	all    []*Server // every rank's
	tok    *tokenizer.Tokenizer
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

type serverOpts struct {
	ranks int
	cfg   Config
	// setup runs on every rank's server before it serves (test hooks).
	setup func(rank int, s *Server)
	grace time.Duration
	ctx   int    // KV cache length (0: 128)
	kv    string // KV cache type (keys and values; "": f16)
	// pp > 1 runs the model as pp pipeline stages of ranks/pp ranks (cfg.Stepper is set).
	pp int
}

func storiesPath(t testing.TB) string { return testfiles.Path(t, "llm", "stories260K.gguf") }

// startServer runs a server at TP = o.ranks (or o.pp stages of o.ranks/o.pp) on the TinyStories model and stops it when the
// test ends, failing the test if Serve failed unexpectedly.
func startServer(t *testing.T, o serverOpts) *testServer {
	t.Helper()
	path := storiesPath(t)
	if o.ranks == 0 {
		o.ranks = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{cancel: cancel, done: make(chan error, 1), all: make([]*Server, o.ranks),
		client: defaultTestClient()}
	ready := make(chan error, o.ranks)
	var once sync.Once
	go func() {
		ts.done <- comm.Run(o.ranks, func(c *comm.Comm) error {
			f, err := gguf.Open(path)
			if err != nil {
				ready <- err
				return err
			}
			defer f.Close()
			mo := model.Options{Context: max(o.ctx, 128), KVType: o.kv}
			var g *TimedGroup
			var m *model.Model
			cfg := o.cfg
			if o.pp > 1 {
				pm, err := pipeline.Load(c, f, pipeline.Options{Stages: o.pp, Mem: 1 << 30, Model: mo,
					Wrap: func(in model.Group) model.Group { g = NewTimedGroup(in); return g }})
				if err != nil {
					ready <- err
					return err
				}
				m, cfg.Stepper = pm.Local, pm
			} else {
				g = NewTimedGroup(tp.New(c))
				mo.Group = g
				if m, err = model.Load(f, mo); err != nil {
					ready <- err
					return err
				}
			}
			tok, err := model.LoadTokenizer(f)
			if err != nil {
				ready <- err
				return err
			}
			cfg.ModelName = "stories"
			s, err := New(c, m, tok, g, cfg)
			if err != nil {
				ready <- err
				return err
			}
			ts.all[c.Rank()] = s
			if o.setup != nil {
				o.setup(c.Rank(), s)
			}
			var ln net.Listener
			if c.Rank() == 0 {
				ln, err = net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					ready <- err
					return err
				}
				once.Do(func() {
					scheme := "http://"
					if cfg.TLS != nil {
						scheme = "https://"
					}
					ts.url = scheme + ln.Addr().String()
					ts.srv, ts.tok = s, tok
				})
			}
			ready <- nil
			return s.Serve(ctx, ln, o.grace)
		})
	}()
	for i := 0; i < o.ranks; i++ {
		if err := <-ready; err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ts.done:
			if err != nil && !t.Failed() && o.setup == nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the server did not stop")
		}
	})
	return ts
}

func defaultTestClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// post sends a JSON body and returns the status, headers and body.
func (ts *testServer) post(t *testing.T, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	resp, err := ts.client.Post(ts.url+path, "application/json", r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

func (ts *testServer) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := ts.client.Get(ts.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// completion is the parts of a non-streamed response the tests read.
type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int    `json:"index"`
		Text    string `json:"text"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    *string `json:"role"`
			Content string  `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// streamed is a parsed event stream: its chunks, the joined text, and whether [DONE] came.
type streamed struct {
	chunks []completion
	text   string
	done   bool
	finish string
	usage  *completion
	errMsg string
}

func parseStream(t *testing.T, r io.Reader, chat bool) streamed {
	t.Helper()
	var s streamed
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream line %q is not a data line", line)
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		if s.done {
			t.Fatalf("data after [DONE]: %q", data)
		}
		var c completion
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c.Error != nil {
			s.errMsg = c.Error.Message
			continue
		}
		s.chunks = append(s.chunks, c)
		if len(c.Choices) != 1 {
			t.Fatalf("chunk with %d choices: %s", len(c.Choices), data)
		}
		ch := c.Choices[0]
		if chat {
			s.text += ch.Delta.Content
		} else {
			s.text += ch.Text
		}
		if ch.FinishReason != nil {
			s.finish = *ch.FinishReason
			s.usage = &c
		}
	}
	return s
}

// stream posts a streaming request and parses the events.
func (ts *testServer) stream(t *testing.T, path string, body map[string]any) streamed {
	t.Helper()
	body["stream"] = true
	j, _ := json.Marshal(body)
	resp, err := ts.client.Post(ts.url+path, "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return parseStream(t, resp.Body, path == "/v1/chat/completions")
}

// reference generates greedily with model.Generate, as `llm generate` does, and returns the
// text after the prompt.
func reference(t testing.TB, prompt []int32, n int) string {
	t.Helper()
	f, err := gguf.Open(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f, model.Options{Context: 128})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := model.LoadTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	dec := tok.NewStreamDecoder()
	err = m.Generate(prompt, n, greedyParams, func(id int32) (bool, error) {
		if tok.IsEOG(id) {
			return false, nil
		}
		out.WriteString(dec.Add(id))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String() + dec.Flush()
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

func errorOf(t *testing.T, body []byte) completion {
	t.Helper()
	var c completion
	if err := json.Unmarshal(body, &c); err != nil || c.Error == nil {
		t.Fatalf("not an OpenAI error object: %s (%v)", body, err)
	}
	if c.Error.Message == "" || c.Error.Type == "" || c.Error.Code == "" {
		t.Fatalf("error object lacks message, type or code: %s", body)
	}
	return c
}
