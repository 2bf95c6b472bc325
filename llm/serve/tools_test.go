package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const weatherParams = `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}`
const timeParams = `{"type":"object","properties":{"zone":{"type":"string","maxLength":8}},"required":["zone"],"additionalProperties":false}`

func testTools() []any {
	return []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Weather in a city", "parameters": json.RawMessage(weatherParams)}},
		map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "description": "Time in a zone", "parameters": json.RawMessage(timeParams)}},
	}
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type toolResponse struct {
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content   *string    `json:"content"`
			ToolCalls []wireCall `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

// checkCalls validates each call's arguments against its function's schema.
func checkCalls(t *testing.T, what string, calls []wireCall) {
	t.Helper()
	schemas := map[string]string{"get_weather": weatherParams, "get_time": timeParams}
	for _, c := range calls {
		src, ok := schemas[c.Function.Name]
		if !ok || c.Type != "function" || !strings.HasPrefix(c.ID, "call_") {
			t.Errorf("%s: call %+v", what, c)
			continue
		}
		var schema map[string]any
		json.Unmarshal([]byte(src), &schema)
		var args any
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
			t.Errorf("%s: arguments %q: %v", what, c.Function.Arguments, err)
			continue
		}
		if err := validate(schema, args, c.Function.Name); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func TestToolCalls(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2, ctx: 2048})
	user := map[string]any{"role": "user", "content": "What is the weather in Paris?"}
	req := map[string]any{"messages": []any{user}, "tools": testTools(), "tool_choice": "required", "max_tokens": 400, "temperature": 1}
	parallel := -1
	var first toolResponse
	for seed := 1; seed <= 4; seed++ {
		req["seed"] = seed
		code, _, body := ts.post(t, "/v1/chat/completions", req)
		var r toolResponse
		if code != 200 || json.Unmarshal(body, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("%d %s", code, body)
		}
		ch := r.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 || ch.Message.Content != nil {
			t.Errorf("seed %d: %s", seed, body)
			continue
		}
		checkCalls(t, "required", ch.Message.ToolCalls)
		if len(ch.Message.ToolCalls) > 1 && parallel < 0 {
			parallel = seed
			first = r
		}
		t.Logf("seed %d: %d calls %s", seed, len(ch.Message.ToolCalls), body)
	}
	if parallel < 0 {
		t.Fatalf("no seed of 4 gave parallel calls")
	}

	// Streamed, the same seed: the tool_calls deltas assemble into the same calls.
	req["seed"] = parallel
	req["stream"] = true
	b, _ := json.Marshal(req)
	resp, err := ts.client.Post(ts.url+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var streamed []wireCall
	finish := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index int `json:"index"`
						wireCall
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.Choices[0].Delta.ToolCalls {
			for len(streamed) <= d.Index {
				streamed = append(streamed, wireCall{})
			}
			s := &streamed[d.Index]
			if d.ID != "" {
				s.ID, s.Type, s.Function.Name = d.ID, d.Type, d.Function.Name
			}
			s.Function.Arguments += d.Function.Arguments
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	resp.Body.Close()
	want := first.Choices[0].Message.ToolCalls
	if finish != "tool_calls" || len(streamed) != len(want) {
		t.Fatalf("streamed: finish %q, %d calls, want %d", finish, len(streamed), len(want))
	}
	for i := range want {
		if streamed[i].Function != want[i].Function {
			t.Errorf("streamed call %d %+v, whole %+v", i, streamed[i].Function, want[i].Function)
		}
	}

	// A named function: exactly one call of it.
	named := map[string]any{"messages": []any{user}, "tools": testTools(), "max_tokens": 200, "seed": 2,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}}
	code, _, body := ts.post(t, "/v1/chat/completions", named)
	var nr toolResponse
	if code != 200 || json.Unmarshal(body, &nr) != nil || len(nr.Choices[0].Message.ToolCalls) != 1 || nr.Choices[0].Message.ToolCalls[0].Function.Name != "get_time" {
		t.Fatalf("named: %d %s", code, body)
	}
	checkCalls(t, "named", nr.Choices[0].Message.ToolCalls)

	// The round trip: the calls and their results fed back; the prompt carries them.
	calls := first.Choices[0].Message.ToolCalls
	msgs := []any{user, map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}}
	for _, c := range calls {
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": `{"result":"sunny"}`})
	}
	code, _, body = ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "tools": testTools(), "max_tokens": 20, "temperature": 0})
	var rt toolResponse
	if code != 200 || json.Unmarshal(body, &rt) != nil || len(rt.Choices) != 1 {
		t.Fatalf("round trip: %d %s", code, body)
	}
	var turns []turn
	turns = append(turns, turn{Message: Message{"user", "What is the weather in Paris?"}})
	var tc []ToolCall
	for _, c := range calls {
		tc = append(tc, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	turns = append(turns, turn{Message: Message{Role: "assistant"}, ToolCalls: tc})
	for _, c := range calls {
		turns = append(turns, turn{Message: Message{"tool", `{"result":"sunny"}`}, ToolCallID: c.ID})
	}
	tools, _ := parseTools(mustRaw(testTools()))
	prompt, err := ts.srv.tmpl.render(turns, tools)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(prompt, "<tool_response>") != len(calls) || strings.Count(prompt, "<tool_call>") != len(calls)+1 || !strings.Contains(prompt, `"name":"get_weather"`) {
		t.Errorf("rendered round trip: %q", prompt)
	}
	t.Logf("after the tools: %s", body)
}

func mustRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestParseToolCalls(t *testing.T) {
	tools := []tool{{Name: "get_weather"}, {Name: "get_time"}}
	for _, tc := range []struct {
		text, content string
		names         []string
		args          []string
	}{
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>", "", []string{"get_weather", "get_time"}, []string{`{"city":"Paris"}`, `{}`}},
		{"Let me look. <tool_call>{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"UTC\\\"}\"}</tool_call>", "Let me look.", []string{"get_time"}, []string{`{"zone":"UTC"}`}},
		{`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]`, "", []string{"get_weather", "get_time"}, []string{`{"city":"Oslo"}`, `{"zone":"CET"}`}},
		{`<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}}; {"name": "get_time", "parameters": {"zone": "X"}}`, "", []string{"get_weather", "get_time"}, []string{`{"city":"Rome"}`, `{"zone":"X"}`}},
		{`{"name": "get_weather", "parameters": {"city": "Rome"}}`, "", []string{"get_weather"}, []string{`{"city":"Rome"}`}},
		{`{"name": "delete_all", "parameters": {}}`, `{"name": "delete_all", "parameters": {}}`, nil, nil},
		{"Once upon a time", "Once upon a time", nil, nil},
		{"<tool_call>{\"name\": \"get_time\", \"arguments\": {</tool_call>", "<tool_call>{\"name\": \"get_time\", \"arguments\": {</tool_call>", nil, nil},
	} {
		content, calls := parseToolCalls(tc.text, tools)
		if content != tc.content || len(calls) != len(tc.names) {
			t.Errorf("%q: content %q, %d calls %+v", tc.text, content, len(calls), calls)
			continue
		}
		for i, c := range calls {
			if c.Name != tc.names[i] || c.Arguments != tc.args[i] {
				t.Errorf("%q: call %d %+v", tc.text, i, c)
			}
		}
	}
}

func TestToolsBadInput(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 1, ctx: 1024})
	user := map[string]any{"role": "user", "content": "Hi"}
	call := []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_time", "arguments": `{"zone":"UTC"}`}}}
	for _, tc := range []struct {
		name  string
		req   map[string]any
		param string
	}{
		{"unknown named function", map[string]any{"messages": []any{user}, "tools": testTools(), "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "launch"}}}, "tool_choice"},
		{"tool_choice without tools", map[string]any{"messages": []any{user}, "tool_choice": "required"}, "tool_choice"},
		{"bad tool_choice", map[string]any{"messages": []any{user}, "tools": testTools(), "tool_choice": "always"}, "tool_choice"},
		{"tool type", map[string]any{"messages": []any{user}, "tools": []any{map[string]any{"type": "retrieval"}}}, "tools[0].type"},
		{"tool name", map[string]any{"messages": []any{user}, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "a b"}}}}, "tools[0].function.name"},
		{"inexpressible parameters", map[string]any{"messages": []any{user}, "tool_choice": "required", "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "pattern": "a+"}}}}}}}, "tools"},
		{"tool message without id", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "tool_calls": call}, map[string]any{"role": "tool", "content": "12:00"}}}, "messages[2].tool_call_id"},
		{"tool message answering nothing", map[string]any{"messages": []any{user, map[string]any{"role": "tool", "tool_call_id": "call_9", "content": "12:00"}}}, "messages[1].tool_call_id"},
		{"arguments not JSON", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "get_time", "arguments": "{zone"}}}}, user}}, "messages[1].tool_calls[0].function.arguments"},
		{"tool_calls not an array", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "tool_calls": "get_time()"}, user}}, "messages[1].tool_calls"},
		{"tool_calls on a user", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x", "tool_calls": call}}}, "messages[0].tool_calls"},
	} {
		code, _, body := ts.post(t, "/v1/chat/completions", tc.req)
		e := errorOf(t, body)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s", tc.name, code, body)
		}
	}
}
