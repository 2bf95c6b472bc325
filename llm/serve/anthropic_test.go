package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type anthropicMessage struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		In  int `json:"input_tokens"`
		Out int `json:"output_tokens"`
	} `json:"usage"`
}

func TestAnthropicMessages(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2})
	// The same conversation through chat completions is the reference.
	chat := map[string]any{"messages": []any{map[string]any{"role": "system", "content": "You tell stories."}, map[string]any{"role": "user", "content": "Tell me about a cat."}},
		"max_tokens": 24, "temperature": 0}
	code, _, body := ts.post(t, "/v1/chat/completions", chat)
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil {
		t.Fatalf("%d %s", code, body)
	}
	want := c.Choices[0].Message.Content
	req := map[string]any{"model": "stories", "system": "You tell stories.", "max_tokens": 24, "temperature": 0,
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Tell me about a cat."}}}}}
	code, _, body = ts.post(t, "/v1/messages", req)
	var m anthropicMessage
	if code != 200 || json.Unmarshal(body, &m) != nil || m.Type != "message" || m.Role != "assistant" || len(m.Content) != 1 ||
		m.Content[0].Type != "text" || m.Content[0].Text != want || m.StopReason != "max_tokens" || m.Usage.Out != 24 || m.Usage.In != c.Usage.Prompt ||
		!strings.HasPrefix(m.ID, "msg_") {
		t.Fatalf("messages: %d %s; want text %q", code, body, want)
	}

	// Streamed: Anthropic's event sequence, the deltas joining to the same text.
	req["stream"] = true
	b, _ := json.Marshal(req)
	resp, err := ts.client.Post(ts.url+"/v1/messages", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	var text string
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var d struct {
			Type  string `json:"type"`
			Delta struct {
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &d) != nil || d.Type != event {
			t.Fatalf("event %q data %s", event, data)
		}
		if len(events) == 0 || events[len(events)-1] != event {
			events = append(events, event)
		}
		text += d.Delta.Text
		if event == "message_delta" && d.Delta.StopReason != "max_tokens" {
			t.Errorf("stop_reason %q", d.Delta.StopReason)
		}
	}
	resp.Body.Close()
	if got := strings.Join(events, ","); got != "message_start,content_block_start,ping,content_block_delta,content_block_stop,message_delta,message_stop" || text != want {
		t.Errorf("stream: events %s, text %q", got, text)
	}

	// A stop sequence.
	words := strings.Fields(want)
	stop := words[len(words)/2]
	req = map[string]any{"model": "stories", "system": "You tell stories.", "max_tokens": 24, "temperature": 0, "stop_sequences": []string{stop},
		"messages": []any{map[string]any{"role": "user", "content": "Tell me about a cat."}}}
	code, _, body = ts.post(t, "/v1/messages", req)
	m = anthropicMessage{}
	if code != 200 || json.Unmarshal(body, &m) != nil || m.StopReason != "stop_sequence" || m.StopSequence == nil || *m.StopSequence != stop ||
		!strings.HasPrefix(want, m.Content[0].Text) || strings.Contains(m.Content[0].Text, stop) {
		t.Errorf("stop %q: %d %s", stop, code, body)
	}

	// Errors in Anthropic's form.
	for _, bad := range []map[string]any{
		{"model": "stories", "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		{"model": "stories", "max_tokens": 5, "messages": []any{map[string]any{"role": "system", "content": "hi"}}},
		{"model": "stories", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}}}},
		{"model": "stories", "max_tokens": 5, "messages": []any{}},
	} {
		code, _, body := ts.post(t, "/v1/messages", bad)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if code != 400 || json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("%v: %d %s", bad, code, body)
		}
	}
}
