package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/llm/sample"
	"github.com/gorun-hpc/gorun/llm/serve/constrain"
)

// apiError is OpenAI's error object.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(code, param, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error", Code: code}
	if param != "" {
		e.Param = &param
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error": e})
}

// engineError maps the engine's refusals and failures to responses.
func engineError(err error) *apiError {
	switch {
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, Message: "the server is busy: " + err.Error() + "; retry later", Type: "server_busy", Code: "queue_full"}
	case errors.Is(err, ErrShuttingDown):
		return &apiError{status: http.StatusServiceUnavailable, Message: err.Error(), Type: "server_error", Code: "shutting_down"}
	default:
		return &apiError{status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error", Code: "rank_failure"}
	}
}

// statusWriter records the status code for the requests metric.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) count(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		h(sw, r)
		s.metrics.requests.WithLabelValues(endpoint, strconv.Itoa(sw.code)).Inc()
		if s.cfg.Log != nil {
			s.cfg.Log.Printf("%s %s %d %.1fms", r.Method, r.URL.Path, sw.code, float64(time.Since(start))/1e6)
		}
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.health(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "error", "error": err.Error()})
		return
	}
	active, waiting := s.eng.load()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "slots_idle": s.cfg.Slots - active, "slots_processing": active, "queue": waiting})
}

func (s *Server) modelObject() map[string]any {
	c := &s.m.Cfg
	return map[string]any{
		"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": "gorun",
		"meta": map[string]any{"architecture": c.Arch, "n_ctx": s.cfg.Context, "n_vocab": c.Vocab, "n_layers": c.Layers,
			"tensor_parallel": s.m.Shard.Size, "slots": s.cfg.Slots, "chat_template": s.tmpl.Name},
	}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if e := s.checkModel(r.PathValue("id"), false); e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

// checkModel applies the one model-name rule of every route: the server answers to its own
// name only, as OpenAI does for a model that does not exist (404 model_not_found); a request
// body may leave "model" out (or empty) to mean the server's model.
func (s *Server) checkModel(name string, inBody bool) *apiError {
	if name == s.cfg.ModelName || (inBody && name == "") {
		return nil
	}
	e := &apiError{status: http.StatusNotFound, Message: fmt.Sprintf("the model %q does not exist; this server serves %q", name, s.cfg.ModelName),
		Type: "invalid_request_error", Code: "model_not_found"}
	if inBody {
		param := "model"
		e.Param = &param
		e.Message += ` (send that name, or leave "model" out)`
	}
	return e
}

// genParams are the generation fields both endpoints share (OpenAI's, and top_k, min_p and
// ignore_eos as llama.cpp's server accepts them).
type genParams struct {
	Model       string          `json:"model"`
	MaxTokens   *int            `json:"max_tokens"`
	MaxCompl    *int            `json:"max_completion_tokens"`
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	TopK        *int            `json:"top_k"`
	MinP        *float64        `json:"min_p"`
	Seed        *int64          `json:"seed"`
	Stop        json.RawMessage `json:"stop"`
	Stream      bool            `json:"stream"`
	N           *int            `json:"n"`
	IgnoreEOS   bool            `json:"ignore_eos"`
	// Logprobs is a boolean on /v1/chat/completions, an integer (0..5 alternatives) on
	// /v1/completions.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	// ResponseFormat is OpenAI's {"type": "text" | "json_object" | "json_schema", ...}.
	ResponseFormat json.RawMessage `json:"response_format"`
}

type chatRequest struct {
	genParams
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  json.RawMessage `json:"tool_calls"`
		ToolCallID *string         `json:"tool_call_id"`
	} `json:"messages"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
}

type completionRequest struct {
	genParams
	Prompt json.RawMessage `json:"prompt"`
}

// decode reads a JSON body into v with the size limit, naming what was wrong.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &apiError{status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", mb.Limit), Type: "invalid_request_error", Code: "request_too_large"}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &apiError{status: http.StatusRequestTimeout, Message: fmt.Sprintf("the request body did not arrive within the read timeout (%v)", limit(s.cfg.ReadTimeout, DefaultReadTimeout)),
				Type: "invalid_request_error", Code: "request_timeout"}
		}
		return badRequest("invalid_body", "", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("invalid_json", "", "the request body is empty; want a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			te.Field = strings.TrimPrefix(te.Field, "genParams.")
			return badRequest("invalid_type", te.Field, "field %q: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type))
		case errors.As(err, &se):
			return badRequest("invalid_json", "", "malformed JSON at byte %d: %v", se.Offset, err)
		default:
			return badRequest("invalid_json", "", "malformed JSON: %v", err)
		}
	}
	return nil
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a JSON value"
}

// job builds the engine job of a request whose prompt is tokenized, checking the numbers;
// promptParam names the request's prompt field in errors ("messages" or "prompt").
func (s *Server) job(ctx context.Context, p *genParams, prompt []int32, promptParam string) (*job, *apiError) {
	if len(prompt) == 0 {
		return nil, badRequest("invalid_value", promptParam, "the prompt is empty")
	}
	ctxLen := s.cfg.Context
	if len(prompt) >= ctxLen {
		return nil, badRequest("context_length_exceeded", promptParam, "the prompt has %d tokens; this model's context per request is %d tokens (one must be left to generate)", len(prompt), ctxLen)
	}
	j := &job{ctx: ctx, prompt: prompt, maxTokens: ctxLen - len(prompt), ignoreEOS: p.IgnoreEOS}
	maxTok := p.MaxTokens
	if p.MaxCompl != nil {
		maxTok = p.MaxCompl
	}
	if maxTok != nil {
		switch {
		case *maxTok < 1:
			return nil, badRequest("invalid_value", "max_tokens", "max_tokens = %d: want >= 1", *maxTok)
		case len(prompt)+*maxTok > ctxLen:
			return nil, badRequest("context_length_exceeded", "max_tokens", "max_tokens = %d plus the prompt's %d tokens exceed this model's context of %d tokens", *maxTok, len(prompt), ctxLen)
		}
		j.maxTokens = *maxTok
	}
	// OpenAI's defaults: temperature 1, top_p 1; top_k and min_p off unless given.
	j.params = sample.Params{Temperature: 1, TopP: 1}
	if t := p.Temperature; t != nil {
		if *t < 0 || *t > 2 || math.IsNaN(*t) {
			return nil, badRequest("invalid_value", "temperature", "temperature = %g: want 0..2", *t)
		}
		j.params.Temperature = float32(*t)
	}
	if t := p.TopP; t != nil {
		if *t <= 0 || *t > 1 {
			return nil, badRequest("invalid_value", "top_p", "top_p = %g: want (0, 1]", *t)
		}
		j.params.TopP = float32(*t)
	}
	if k := p.TopK; k != nil {
		if *k < 0 {
			return nil, badRequest("invalid_value", "top_k", "top_k = %d: want >= 0", *k)
		}
		j.params.TopK = *k
	}
	if m := p.MinP; m != nil {
		if *m < 0 || *m > 1 {
			return nil, badRequest("invalid_value", "min_p", "min_p = %g: want 0..1", *m)
		}
		j.params.MinP = float32(*m)
	}
	if p.Seed != nil {
		j.params.Seed = uint64(*p.Seed)
	} else {
		var b [8]byte
		rand.Read(b[:])
		j.params.Seed = binary.LittleEndian.Uint64(b[:])
	}
	stops, err := parseStop(p.Stop)
	if err != nil {
		return nil, err
	}
	j.stops = stops
	if err := parseLogprobs(p, promptParam == "messages", j); err != nil {
		return nil, err
	}
	if j.grammar, err = s.responseFormat(p.ResponseFormat); err != nil {
		return nil, err
	}
	return j, nil
}

// responseFormat compiles response_format into the grammar the output must follow (nil for
// free text).
func (s *Server) responseFormat(raw json.RawMessage) (*constrain.Grammar, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, badRequest("invalid_type", "response_format", "response_format: want an object {\"type\": \"text\", \"json_object\" or \"json_schema\"}: %v", err)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return constrain.JSONObject(), nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || string(rf.JSONSchema.Schema) == "null" {
			return nil, badRequest("invalid_value", "response_format.json_schema.schema", "response_format json_schema needs json_schema.schema")
		}
		g, err := constrain.CompileSchema(rf.JSONSchema.Schema)
		if err != nil {
			return nil, badRequest("invalid_value", "response_format.json_schema.schema", "response_format: %v", err)
		}
		return g, nil
	}
	return nil, badRequest("invalid_value", "response_format.type", "response_format.type = %q: want text, json_object or json_schema", rf.Type)
}

// constraintVocab is the vocabulary's trie for output masks, built on first use.
func (s *Server) constraintVocab() *constrain.Vocab {
	s.vocabOnce.Do(func() {
		pieces := make([]string, s.tok.NumTokens())
		var eog []int32
		for i := range pieces {
			pieces[i] = s.tok.TokenPiece(int32(i))
			if s.tok.IsEOG(int32(i)) {
				eog = append(eog, int32(i))
			}
		}
		s.vocab = constrain.NewVocab(pieces, eog)
	})
	return s.vocab
}

// parseLogprobs reads logprobs and top_logprobs: on chat, logprobs is a boolean and
// top_logprobs 0..20 (only with logprobs true); on completions, logprobs is the number of
// alternatives, 0..5.
func parseLogprobs(p *genParams, chat bool, j *job) *apiError {
	raw := p.Logprobs
	given := len(raw) > 0 && string(raw) != "null"
	if chat {
		if given {
			if err := json.Unmarshal(raw, &j.logprobs); err != nil {
				return badRequest("invalid_type", "logprobs", "logprobs: want a boolean")
			}
		}
		if p.TopLogprobs != nil {
			k := *p.TopLogprobs
			switch {
			case k < 0 || k > MaxTopLogprobs:
				return badRequest("invalid_value", "top_logprobs", "top_logprobs = %d: want 0..%d", k, MaxTopLogprobs)
			case !j.logprobs:
				return badRequest("invalid_value", "top_logprobs", "top_logprobs needs logprobs set to true")
			}
			j.topK = k
		}
		return nil
	}
	if p.TopLogprobs != nil {
		return badRequest("invalid_value", "top_logprobs", "top_logprobs is a chat parameter; on /v1/completions logprobs is the number of alternatives")
	}
	if !given {
		return nil
	}
	var k int
	if err := json.Unmarshal(raw, &k); err != nil {
		return badRequest("invalid_type", "logprobs", "logprobs: want an integer 0..5 on /v1/completions")
	}
	if k < 0 || k > 5 {
		return badRequest("invalid_value", "logprobs", "logprobs = %d: want 0..5", k)
	}
	j.logprobs, j.topK = true, k
	return nil
}

// maxChoices bounds n (OpenAI's limit).
const maxChoices = 128

// choices reads n: 1 when absent, at most maxChoices and at most the queue (every choice is a
// request of its own in the engine).
func (s *Server) choices(p *genParams) (int, *apiError) {
	if p.N == nil {
		return 1, nil
	}
	n := *p.N
	switch {
	case n < 1 || n > maxChoices:
		return 0, badRequest("invalid_value", "n", "n = %d: want 1..%d", n, maxChoices)
	case n > s.cfg.Queue:
		return 0, badRequest("invalid_value", "n", "n = %d: this server queues at most %d requests (--queue)", n, s.cfg.Queue)
	}
	return n, nil
}

// parseStop accepts OpenAI's stop: null, a string, or an array of up to 4 strings.
func parseStop(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("invalid_type", "stop", "stop: want a string or an array of strings")
	}
	if len(many) > 4 {
		return nil, badRequest("invalid_value", "stop", "stop: %d sequences, at most 4", len(many))
	}
	var out []string
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// messageText reads a message's content: a string, or an array of text parts.
func messageText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkModel(req.Model, true); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, badRequest("invalid_value", "messages", "messages is empty: want at least one message"))
		return
	}
	tools, e := parseTools(req.Tools)
	if e != nil {
		writeError(w, e)
		return
	}
	choice, e := parseToolChoice(req.ToolChoice, tools)
	if e != nil {
		writeError(w, e)
		return
	}
	turns, e := chatTurns(req.Messages)
	if e != nil {
		writeError(w, e)
		return
	}
	offered := tools
	if choice.mode == "none" {
		offered = nil
	}
	text, err := s.tmpl.render(turns, offered)
	if err != nil {
		writeError(w, badRequest("invalid_value", "messages", "%v", err))
		return
	}
	ts := &toolSet{tools: offered}
	if choice.mode == "required" || choice.mode == "function" {
		parallel := req.ParallelToolCalls == nil || *req.ParallelToolCalls
		if ts.grammar, e = toolGrammar(s.tmpl.toolFormat(), tools, choice, parallel); e != nil {
			writeError(w, e)
			return
		}
	}
	// A template that writes the BOS token itself gets none added by the tokenizer.
	addSpecial := s.tmpl.BOSText() == "" || !strings.HasPrefix(text, s.tmpl.BOSText())
	prompt, err := s.tok.Encode(text, addSpecial, true)
	if err != nil {
		writeError(w, badRequest("invalid_value", "messages", "tokenizing the prompt: %v", err))
		return
	}
	s.generate(w, r, &req.genParams, prompt, true, ts)
}

// toolSet is what a chat request with tools adds to generation: the tools whose calls are
// parsed from the reply, and the grammar that forces calls (tool_choice required or named).
type toolSet struct {
	tools   []tool
	grammar *constrain.Grammar
}

// chatTurns checks the messages: roles, contents, an assistant's tool_calls, a tool
// message's tool_call_id (which must answer a call made earlier in the conversation).
func chatTurns(in []struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}) ([]turn, *apiError) {
	turns := make([]turn, len(in))
	called := map[string]bool{}
	for i, m := range in {
		p := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		case "":
			return nil, badRequest("invalid_value", p+".role", "%s has no role", p)
		default:
			return nil, badRequest("invalid_value", p+".role", "%s.role = %q: want system, user, assistant or tool", p, m.Role)
		}
		var t turn
		t.Role = m.Role
		if t.Role == "developer" {
			t.Role = "system"
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			if m.Role != "assistant" {
				return nil, badRequest("invalid_value", p+".tool_calls", "%s: only assistant messages carry tool_calls", p)
			}
			var calls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			}
			if json.Unmarshal(m.ToolCalls, &calls) != nil {
				return nil, badRequest("invalid_type", p+".tool_calls", "%s.tool_calls: want an array of {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\": a JSON string}}", p)
			}
			for k, c := range calls {
				cp := fmt.Sprintf("%s.tool_calls[%d]", p, k)
				var args any
				switch {
				case c.ID == "":
					return nil, badRequest("invalid_value", cp+".id", "%s has no id", cp)
				case c.Type != "function":
					return nil, badRequest("invalid_value", cp+".type", "%s.type = %q: want \"function\"", cp, c.Type)
				case !validFunctionName(c.Function.Name):
					return nil, badRequest("invalid_value", cp+".function.name", "%s.function.name = %q is not a function name", cp, c.Function.Name)
				case json.Unmarshal([]byte(c.Function.Arguments), &args) != nil:
					return nil, badRequest("invalid_value", cp+".function.arguments", "%s.function.arguments is not JSON text", cp)
				}
				called[c.ID] = true
				t.ToolCalls = append(t.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		}
		if m.Role == "tool" {
			if m.ToolCallID == nil || *m.ToolCallID == "" {
				return nil, badRequest("invalid_value", p+".tool_call_id", "%s: a tool message needs tool_call_id", p)
			}
			if !called[*m.ToolCallID] {
				return nil, badRequest("invalid_value", p+".tool_call_id", "%s.tool_call_id = %q answers no tool call of an earlier assistant message", p, *m.ToolCallID)
			}
			t.ToolCallID = *m.ToolCallID
		}
		if len(m.Content) == 0 || string(m.Content) == "null" {
			if len(t.ToolCalls) == 0 {
				return nil, badRequest("invalid_type", p+".content", "%s has no content", p)
			}
		} else {
			text, ok := messageText(m.Content)
			if !ok {
				return nil, badRequest("invalid_type", p+".content", "%s.content: want a string or an array of text parts", p)
			}
			t.Content = text
		}
		turns[i] = t
	}
	if last := turns[len(turns)-1]; strings.TrimSpace(last.Content) == "" && len(last.ToolCalls) == 0 {
		return nil, badRequest("invalid_value", fmt.Sprintf("messages[%d].content", len(turns)-1), "the last message is empty")
	}
	return turns, nil
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkModel(req.Model, true); e != nil {
		writeError(w, e)
		return
	}
	var prompt []int32
	var text string
	var list []string
	switch {
	case len(req.Prompt) == 0 || string(req.Prompt) == "null":
		writeError(w, badRequest("invalid_value", "prompt", "prompt is missing"))
		return
	case json.Unmarshal(req.Prompt, &text) == nil:
	case json.Unmarshal(req.Prompt, &list) == nil && len(list) == 1:
		text = list[0]
	case json.Unmarshal(req.Prompt, &prompt) == nil:
		for _, id := range prompt {
			if id < 0 || int(id) >= s.tok.NumTokens() {
				writeError(w, badRequest("invalid_value", "prompt", "prompt token %d is outside the vocabulary of %d", id, s.tok.NumTokens()))
				return
			}
		}
	default:
		writeError(w, badRequest("invalid_type", "prompt", "prompt: want a string, an array of one string, or an array of token ids"))
		return
	}
	if prompt == nil {
		if text == "" {
			writeError(w, badRequest("invalid_value", "prompt", "the prompt is empty"))
			return
		}
		var err error
		if prompt, err = s.tok.Encode(text, true, true); err != nil {
			writeError(w, badRequest("invalid_value", "prompt", "tokenizing the prompt: %v", err))
			return
		}
	}
	s.generate(w, r, &req.genParams, prompt, false, nil)
}

// generate runs a request's n choices and writes its response, whole or streamed.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, p *genParams, prompt []int32, chat bool, ts *toolSet) {
	promptParam := "prompt"
	if chat {
		promptParam = "messages"
	}
	n, e := s.choices(p)
	if e != nil {
		writeError(w, e)
		return
	}
	// Every choice runs under ctx, cancelled when the handler returns: a choice left in the
	// engine after an error or the client's departure is dropped at its next step.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	first, e := s.job(ctx, p, prompt, promptParam)
	if e != nil {
		writeError(w, e)
		return
	}
	var tools []tool
	if ts != nil {
		tools = ts.tools
		if ts.grammar != nil {
			if first.grammar != nil {
				writeError(w, badRequest("invalid_value", "response_format", "response_format cannot be combined with tool_choice required or a named function"))
				return
			}
			first.grammar = ts.grammar
		}
	}
	jobs := make([]*job, n)
	for i := range jobs {
		j := *first
		j.params.Seed = first.params.Seed + uint64(i) // choice i draws as a request with seed+i
		if j.grammar != nil {
			j.matcher, j.vocab, j.allowed = j.grammar.NewMatcher(), s.constraintVocab(), make([]bool, s.tok.NumTokens())
		}
		jobs[i] = &j
		if err := s.eng.submit(jobs[i]); err != nil {
			ae := engineError(err)
			if ae.status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			writeError(w, ae)
			return
		}
	}
	// The write timeout counts from each write, not from the request (the model may work far
	// longer): armed before each one, and for the server's last writes after the handler.
	rc := http.NewResponseController(w)
	defer s.armWrite(rc)
	prefix, object := "cmpl-", "text_completion"
	if chat {
		prefix, object = "chatcmpl-", "chat.completion"
	}
	id := fmt.Sprintf("%s%d-%d", prefix, s.created, s.ids.Add(1))
	created := time.Now().Unix()
	events := merge(ctx, jobs)
	if p.Stream {
		s.stream(w, r, events, n, id, object+map[bool]string{true: ".chunk", false: ""}[chat], created, chat, first.logprobs, tools)
		return
	}
	texts := make([]strings.Builder, n)
	lps := make([][]TokenLogprob, n)
	choices := make([]any, n)
	total := Event{PromptTokens: len(prompt)}
	for left := n; left > 0; {
		ie, ok := nextOf(r.Context(), events)
		if !ok {
			return // the client left; the engine frees the slots
		}
		ev, i := ie.ev, ie.i
		if ev.Err != nil {
			if r.Context().Err() == nil {
				s.armWrite(rc)
				writeError(w, engineError(ev.Err))
			}
			return
		}
		texts[i].WriteString(ev.Text)
		lps[i] = append(lps[i], ev.Logprobs...)
		if ev.Finish == "" {
			continue
		}
		left--
		total.CompletionTokens += ev.CompletionTokens
		total.CachedTokens = max(total.CachedTokens, ev.CachedTokens)
		choice := map[string]any{"index": i, "finish_reason": ev.Finish, "logprobs": nil}
		if chat {
			msg := map[string]any{"role": "assistant", "content": texts[i].String()}
			if len(tools) > 0 {
				content, calls := parseToolCalls(texts[i].String(), tools)
				if len(calls) > 0 {
					msg["tool_calls"] = toolCallsJSON(calls)
					msg["content"] = nil
					if content != "" {
						msg["content"] = content
					}
					if ev.Finish == "stop" {
						choice["finish_reason"] = "tool_calls"
					}
				}
			}
			choice["message"] = msg
			if first.logprobs {
				choice["logprobs"] = chatLogprobs(lps[i])
			}
		} else {
			choice["text"] = texts[i].String()
			if first.logprobs {
				choice["logprobs"] = completionLogprobs(lps[i], 0)
			}
		}
		choices[i] = choice
	}
	s.armWrite(rc)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": object, "created": created, "model": s.cfg.ModelName,
		"choices": choices, "usage": usage(total)})
}

// choiceEvent is an engine event of choice i.
type choiceEvent struct {
	i  int
	ev Event
}

// merge forwards the events of every job, tagged with its index, until each job's last event
// or until ctx ends.
func merge(ctx context.Context, jobs []*job) <-chan choiceEvent {
	out := make(chan choiceEvent)
	for i, j := range jobs {
		go func() {
			for {
				ev, ok := next(ctx, j)
				if !ok {
					return
				}
				select {
				case out <- choiceEvent{i, ev}:
				case <-ctx.Done():
					return
				}
				if ev.Err != nil || ev.Finish != "" {
					return
				}
			}
		}()
	}
	return out
}

// next waits for the job's next event, or for the client to leave.
func next(ctx context.Context, j *job) (Event, bool) {
	select {
	case ev := <-j.events:
		return ev, true
	case <-ctx.Done():
		return Event{}, false
	}
}

// nextOf waits for the next merged event, or for the client to leave.
func nextOf(ctx context.Context, events <-chan choiceEvent) (choiceEvent, bool) {
	select {
	case ev := <-events:
		return ev, true
	case <-ctx.Done():
		return choiceEvent{}, false
	}
}

func usage(ev Event) map[string]any {
	return map[string]any{"prompt_tokens": ev.PromptTokens, "completion_tokens": ev.CompletionTokens,
		"total_tokens": ev.PromptTokens + ev.CompletionTokens, "prompt_tokens_details": map[string]any{"cached_tokens": ev.CachedTokens}}
}

// stream writes Server-Sent Events: a chunk per piece of text of a choice (for chat, each
// choice's first carries the assistant role), a chunk with each choice's finish_reason (the
// last one with the usage of all), then [DONE].
//
// With tools, a choice's text is held until its end, then sent as content and tool_calls
// deltas (each call's id, type and name in one chunk, its arguments in the next).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, events <-chan choiceEvent, n int, id, object string, created int64, chat, logprobs bool, tools []tool) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Each event must reach the client within the write timeout.
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		s.armWrite(rc)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	offsets := make([]int, n) // text sent per choice, for the completions' text_offset
	chunk := func(i int, text string, lps []TokenLogprob, finish any) map[string]any {
		choice := map[string]any{"index": i, "finish_reason": finish, "logprobs": nil}
		if chat {
			delta := map[string]any{}
			if text != "" {
				delta["content"] = text
			}
			choice["delta"] = delta
			if logprobs && len(lps) > 0 {
				choice["logprobs"] = chatLogprobs(lps)
			}
		} else {
			choice["text"] = text
			if logprobs && len(lps) > 0 {
				choice["logprobs"] = completionLogprobs(lps, offsets[i])
			}
			offsets[i] += len(text)
		}
		return map[string]any{"id": id, "object": object, "created": created, "model": s.cfg.ModelName, "choices": []any{choice}}
	}
	if chat {
		for i := range n {
			first := chunk(i, "", nil, nil)
			first["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"role": "assistant", "content": ""}
			if !send(first) {
				return
			}
		}
	}
	held := make([]strings.Builder, n)
	heldLP := make([][]TokenLogprob, n)
	var total Event
	for left := n; left > 0; {
		ie, ok := nextOf(r.Context(), events)
		if !ok {
			return
		}
		ev, i := ie.ev, ie.i
		switch {
		case ev.Err != nil:
			send(map[string]any{"error": engineError(ev.Err)})
			return
		case ev.Finish != "":
			left--
			total.PromptTokens = ev.PromptTokens
			total.CompletionTokens += ev.CompletionTokens
			total.CachedTokens = max(total.CachedTokens, ev.CachedTokens)
			finish := ev.Finish
			if len(tools) > 0 {
				held[i].WriteString(ev.Text)
				content, calls := parseToolCalls(held[i].String(), tools)
				if len(calls) == 0 {
					content = held[i].String()
				}
				if content != "" || len(heldLP[i]) > 0 || len(ev.Logprobs) > 0 {
					if !send(chunk(i, content, append(heldLP[i], ev.Logprobs...), nil)) {
						return
					}
				}
				for k, c := range calls {
					head := chunk(i, "", nil, nil)
					head["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"tool_calls": []any{map[string]any{
						"index": k, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}
					args := chunk(i, "", nil, nil)
					args["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"tool_calls": []any{map[string]any{
						"index": k, "function": map[string]any{"arguments": c.Arguments}}}}
					if !send(head) || !send(args) {
						return
					}
				}
				if len(calls) > 0 && finish == "stop" {
					finish = "tool_calls"
				}
				ev.Text, ev.Logprobs = "", nil
			}
			last := chunk(i, ev.Text, ev.Logprobs, finish)
			if left == 0 {
				last["usage"] = usage(total)
			}
			if !send(last) {
				return
			}
		case len(tools) > 0:
			held[i].WriteString(ev.Text)
			heldLP[i] = append(heldLP[i], ev.Logprobs...)
		default:
			if !send(chunk(i, ev.Text, ev.Logprobs, nil)) {
				return // the client left; the engine sees the request's context end
			}
		}
	}
	s.armWrite(rc)
	fmt.Fprint(w, "data: [DONE]\n\n")
	rc.Flush()
}
