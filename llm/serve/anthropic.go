package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorun-hpc/gorun/llm/serve/constrain"
)

// Anthropic's Messages API (POST /v1/messages) over the same engine: text content, a system
// prompt, stop_sequences, tools (see anthropic_tools.go), streaming with Anthropic's events.

type anthropicRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []anthropicMsg  `json:"messages"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicError writes Anthropic's error object for an apiError.
func anthropicError(w http.ResponseWriter, e *apiError) {
	kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
		408: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}[e.status]
	if kind == "" {
		kind = "api_error"
	}
	msg := e.Message
	if e.Param != nil {
		msg = *e.Param + ": " + msg
	}
	writeJSON(w, e.status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

// anthropicText reads Anthropic content: a string or an array of text blocks.
func anthropicText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" || bl.Text == nil {
			return "", false
		}
		b.WriteString(*bl.Text)
	}
	return b.String(), true
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if e := s.decode(w, r, &req); e != nil {
		anthropicError(w, e)
		return
	}
	if e := s.checkModel(req.Model, true); e != nil {
		anthropicError(w, e)
		return
	}
	if req.MaxTokens == nil {
		anthropicError(w, badRequest("invalid_value", "max_tokens", "max_tokens is required"))
		return
	}
	tools, e := anthropicTools(req.Tools)
	if e != nil {
		anthropicError(w, e)
		return
	}
	choice, parallel, e := anthropicToolChoice(req.ToolChoice, tools)
	if e != nil {
		anthropicError(w, e)
		return
	}
	if len(req.Messages) == 0 {
		anthropicError(w, badRequest("invalid_value", "messages", "messages is empty: want at least one message"))
		return
	}
	var turns []turn
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, ok := anthropicText(req.System)
		if !ok {
			anthropicError(w, badRequest("invalid_type", "system", "system: want a string or an array of text blocks"))
			return
		}
		if sys != "" {
			turns = append(turns, turn{Message: Message{Role: "system", Content: sys}})
		}
	}
	conv, e := anthropicTurns(req.Messages)
	if e != nil {
		anthropicError(w, e)
		return
	}
	turns = append(turns, conv...)
	if req.Messages[len(req.Messages)-1].Role != "user" {
		anthropicError(w, badRequest("invalid_value", "messages", "the last message must be the user's"))
		return
	}
	offered := tools
	if choice.mode == "none" {
		offered = nil
	}
	var grammar *constrain.Grammar
	if choice.mode == "required" || choice.mode == "function" {
		if grammar, e = toolGrammar(s.tmpl.toolFormat(), tools, choice, parallel); e != nil {
			anthropicError(w, e)
			return
		}
	}
	text, err := s.tmpl.render(turns, offered)
	if err != nil {
		anthropicError(w, badRequest("invalid_value", "messages", "%v", err))
		return
	}
	addSpecial := s.tmpl.BOSText() == "" || !strings.HasPrefix(text, s.tmpl.BOSText())
	prompt, err := s.tok.Encode(text, addSpecial, true)
	if err != nil {
		anthropicError(w, badRequest("invalid_value", "messages", "tokenizing the prompt: %v", err))
		return
	}
	if len(req.StopSequences) > 16 {
		anthropicError(w, badRequest("invalid_value", "stop_sequences", "%d stop sequences, at most 16", len(req.StopSequences)))
		return
	}
	stop, _ := json.Marshal(req.StopSequences)
	temp := 1.0
	if req.Temperature != nil {
		if *req.Temperature < 0 || *req.Temperature > 1 {
			anthropicError(w, badRequest("invalid_value", "temperature", "temperature = %g: want 0..1", *req.Temperature))
			return
		}
		temp = *req.Temperature
	}
	gp := genParams{MaxTokens: req.MaxTokens, Temperature: &temp, TopP: req.TopP, TopK: req.TopK, Stop: stop}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	j, e := s.job(ctx, &gp, prompt, "messages")
	if e != nil {
		anthropicError(w, e)
		return
	}
	if grammar != nil {
		j.grammar = grammar
		j.matcher, j.vocab, j.allowed = grammar.NewMatcher(), s.constraintVocab(), make([]bool, s.tok.NumTokens())
	}
	if err := s.eng.submit(j); err != nil {
		ae := engineError(err)
		if ae.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		anthropicError(w, ae)
		return
	}
	rc := http.NewResponseController(w)
	defer s.armWrite(rc)
	id := fmt.Sprintf("msg_%d_%d", s.created, s.ids.Add(1))
	message := func(content []any, stopReason, stopSeq any, in, out, cached int) map[string]any {
		return map[string]any{"id": id, "type": "message", "role": "assistant", "model": s.cfg.ModelName, "content": content,
			"stop_reason": stopReason, "stop_sequence": stopSeq, "usage": map[string]any{"input_tokens": in, "output_tokens": out, "cache_read_input_tokens": cached}}
	}
	if !req.Stream {
		var out strings.Builder
		for {
			ev, ok := next(r.Context(), j)
			if !ok {
				return
			}
			if ev.Err != nil {
				s.armWrite(rc)
				anthropicError(w, engineError(ev.Err))
				return
			}
			out.WriteString(ev.Text)
			if ev.Finish != "" {
				sr, seq := anthropicStop(ev)
				text, calls := out.String(), []ToolCall(nil)
				if len(offered) > 0 {
					text, calls = anthropicCalls(text, offered)
				}
				if len(calls) > 0 && ev.Finish == "stop" {
					sr, seq = "tool_use", nil
				}
				s.armWrite(rc)
				writeJSON(w, http.StatusOK, message(anthropicContent(text, calls), sr, seq, ev.PromptTokens, ev.CompletionTokens, ev.CachedTokens))
				return
			}
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		s.armWrite(rc)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	start := message([]any{}, nil, nil, len(prompt), 0, 0)
	textStart := map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}
	// With tools the text is held to its end, when its tool calls are known (as on the chat
	// route); without, it streams as it comes.
	if !send("message_start", map[string]any{"type": "message_start", "message": start}) ||
		len(offered) == 0 && !send("content_block_start", textStart) ||
		!send("ping", map[string]any{"type": "ping"}) {
		return
	}
	var held strings.Builder
	for {
		ev, ok := next(r.Context(), j)
		if !ok {
			return
		}
		if ev.Err != nil {
			ae := engineError(ev.Err)
			send("error", map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": ae.Message}})
			return
		}
		if len(offered) > 0 {
			held.WriteString(ev.Text)
		} else if ev.Text != "" {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": ev.Text}}) {
				return
			}
		}
		if ev.Finish != "" {
			sr, seq := anthropicStop(ev)
			if len(offered) > 0 {
				text, calls := anthropicCalls(held.String(), offered)
				if len(calls) > 0 && ev.Finish == "stop" {
					sr, seq = "tool_use", nil
				}
				idx := 0
				if text != "" || len(calls) == 0 {
					if !send("content_block_start", textStart) ||
						text != "" && !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}) ||
						!send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) {
						return
					}
					idx++
				}
				for _, c := range calls {
					if !send("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
						"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}) {
						return
					}
					for _, piece := range jsonPieces(c.Arguments, 32) {
						if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
							"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}) {
							return
						}
					}
					if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
						return
					}
					idx++
				}
			} else {
				send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			}
			send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": sr, "stop_sequence": seq},
				"usage": map[string]any{"output_tokens": ev.CompletionTokens}})
			send("message_stop", map[string]any{"type": "message_stop"})
			return
		}
	}
}

// anthropicStop is Anthropic's stop_reason and stop_sequence for a finished job.
func anthropicStop(ev Event) (string, any) {
	switch {
	case ev.Finish == "length":
		return "max_tokens", nil
	case ev.StopText != "":
		return "stop_sequence", ev.StopText
	}
	return "end_turn", nil
}
