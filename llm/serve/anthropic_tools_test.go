package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func anthropicTestTools() []any {
	return []any{
		map[string]any{"name": "get_weather", "description": "Weather in a city", "input_schema": json.RawMessage(weatherParams)},
		map[string]any{"name": "get_time", "description": "Time in a zone", "input_schema": json.RawMessage(timeParams)},
	}
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// /v1/messages with tools: a forced call (tool_choice tool, and any) is the chat route's call
// for the same conversation (same prompt, same grammar), as a tool_use block, whole and
// streamed as input_json_delta pieces; a tool_result fed back continues as the chat route's
// tool message does.
func TestAnthropicTools(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2, ctx: 2048})
	user := "What is the weather in Paris?"
	for _, forced := range []struct {
		anthropic, openai any
	}{
		{map[string]any{"type": "tool", "name": "get_weather"}, map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}},
		{map[string]any{"type": "any", "disable_parallel_tool_use": true}, "required"},
	} {
		chatReq := map[string]any{"messages": []any{map[string]any{"role": "user", "content": user}}, "tools": testTools(), "tool_choice": forced.openai,
			"parallel_tool_calls": false, "max_tokens": 300, "temperature": 0}
		code, _, body := ts.post(t, "/v1/chat/completions", chatReq)
		var ref toolResponse
		if code != 200 || json.Unmarshal(body, &ref) != nil || len(ref.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("chat reference: %d %s", code, body)
		}
		want := ref.Choices[0].Message.ToolCalls[0]
		req := map[string]any{"model": "stories", "max_tokens": 300, "temperature": 0, "tools": anthropicTestTools(), "tool_choice": forced.anthropic,
			"messages": []any{map[string]any{"role": "user", "content": user}}}
		code, _, body = ts.post(t, "/v1/messages", req)
		var m struct {
			Content    []anthropicBlock `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if code != 200 || json.Unmarshal(body, &m) != nil || m.StopReason != "tool_use" || len(m.Content) != 1 {
			t.Fatalf("messages %v: %d %s", forced.anthropic, code, body)
		}
		got := m.Content[0]
		if got.Type != "tool_use" || got.Name != want.Function.Name || !strings.HasPrefix(got.ID, "toolu_") || !sameJSON(string(got.Input), want.Function.Arguments) {
			t.Errorf("messages %v: %+v; chat route's call %+v", forced.anthropic, got, want)
		}
		checkCalls(t, "messages", []wireCall{{ID: "call_" + got.ID, Type: "function", Function: struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{got.Name, string(got.Input)}}})

		// Streamed: the tool_use block's input arrives as input_json_delta pieces.
		req["stream"] = true
		b, _ := json.Marshal(req)
		resp, err := ts.client.Post(ts.url+"/v1/messages", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		var partial strings.Builder
		var start anthropicBlock
		stop := ""
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type         string         `json:"type"`
				ContentBlock anthropicBlock `json:"content_block"`
				Delta        struct {
					Type, PartialJSON, StopReason string
				} `json:"delta"`
			}
			json.Unmarshal([]byte(data), &ev)
			var raw map[string]any
			json.Unmarshal([]byte(data), &raw)
			if d, ok := raw["delta"].(map[string]any); ok {
				if pj, ok := d["partial_json"].(string); ok {
					partial.WriteString(pj)
				}
				if sr, ok := d["stop_reason"].(string); ok {
					stop = sr
				}
			}
			if ev.Type == "content_block_start" {
				start = ev.ContentBlock
			}
			events = append(events, ev.Type)
		}
		resp.Body.Close()
		seq := strings.Join(events, " ")
		if !strings.HasPrefix(seq, "message_start ping content_block_start content_block_delta") || !strings.HasSuffix(seq, "content_block_stop message_delta message_stop") ||
			start.Type != "tool_use" || start.Name != got.Name || stop != "tool_use" || !sameJSON(partial.String(), string(got.Input)) {
			t.Errorf("stream: %s; block %+v; input %q, stop %q; want %s", seq, start, partial.String(), stop, got.Input)
		}
	}

	// A round trip: the call and its result fed back, against the chat route's conversation.
	args := `{"city":"Paris","unit":"c"}`
	chatMsgs := []any{map[string]any{"role": "user", "content": user},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": args}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}}
	code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": chatMsgs, "tools": testTools(), "max_tokens": 24, "temperature": 0})
	var ref toolResponse
	if code != 200 || json.Unmarshal(body, &ref) != nil {
		t.Fatalf("chat round trip: %d %s", code, body)
	}
	msgs := []any{map[string]any{"role": "user", "content": user},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": json.RawMessage(args)}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "call_1", "content": []any{map[string]any{"type": "text", "text": "Sunny, 21 C"}}}}}}
	code, _, body = ts.post(t, "/v1/messages", map[string]any{"model": "stories", "max_tokens": 24, "temperature": 0, "tools": anthropicTestTools(), "messages": msgs})
	var m struct {
		Content []anthropicBlock `json:"content"`
	}
	if code != 200 || json.Unmarshal(body, &m) != nil || len(m.Content) == 0 {
		t.Fatalf("messages round trip: %d %s", code, body)
	}
	var gotText string
	for _, b := range m.Content {
		gotText += b.Text
	}
	if wantText := ref.Choices[0].Message.Content; wantText == nil || len(ref.Choices[0].Message.ToolCalls) == 0 && gotText != *wantText {
		t.Errorf("round trip: %q, chat route %s", gotText, body)
	}
}

// Bad tool input on /v1/messages: 400 with Anthropic's error object naming what was wrong.
func TestAnthropicToolsBadInput(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 1})
	user := map[string]any{"role": "user", "content": "Hi"}
	use := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "get_time", "input": map[string]any{"zone": "UTC"}}}}
	for _, tc := range []struct {
		name string
		req  map[string]any
		want string
	}{
		{"unknown named tool", map[string]any{"messages": []any{user}, "tools": anthropicTestTools(), "tool_choice": map[string]any{"type": "tool", "name": "launch"}}, "tool_choice.name"},
		{"tool_choice without tools", map[string]any{"messages": []any{user}, "tool_choice": map[string]any{"type": "any"}}, "tool_choice"},
		{"bad tool_choice", map[string]any{"messages": []any{user}, "tools": anthropicTestTools(), "tool_choice": map[string]any{"type": "always"}}, "tool_choice.type"},
		{"server tool", map[string]any{"messages": []any{user}, "tools": []any{map[string]any{"type": "bash_20250124", "name": "bash"}}}, "tools.0.type"},
		{"no input_schema", map[string]any{"messages": []any{user}, "tools": []any{map[string]any{"name": "f"}}}, "tools.0.input_schema"},
		{"inexpressible schema", map[string]any{"messages": []any{user}, "tool_choice": map[string]any{"type": "any"}, "tools": []any{map[string]any{"name": "f", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "pattern": "a+"}}}}}}, "tools: "},
		{"result answering nothing", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t9", "content": "1"}}}}}, "messages.0.content.0.tool_use_id"},
		{"tool_use from the user", map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "f", "input": map[string]any{}}}}}}, "messages.0.content.0"},
		{"input not an object", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "f", "input": "x"}}}, user}}, "messages.1.content.0.input"},
		{"tool_use without id", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "name": "f", "input": map[string]any{}}}}, user}}, "messages.1.content.0.id"},
		{"tool_result from the assistant", map[string]any{"messages": []any{user, use, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1"}}}, user}}, "messages.2.content.0"},
		{"result content an image", map[string]any{"messages": []any{user, use, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "image"}}}}}}}, "messages.2.content.0.content"},
	} {
		tc.req["model"], tc.req["max_tokens"] = "stories", 8
		code, _, body := ts.post(t, "/v1/messages", tc.req)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if code != 400 || json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %s; want a message starting %q", tc.name, code, body, tc.want)
		}
	}
}
