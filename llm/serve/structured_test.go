package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gorun-hpc/gorun/llm/serve/constrain"
)

// validate is the tests' own JSON-schema validator, for the keywords the test schemas use.
func validate(schema map[string]any, v any, path string) error {
	if enum, ok := schema["enum"].([]any); ok {
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				return nil
			}
		}
		return fmt.Errorf("%s: %v is not in %v", path, v, enum)
	}
	switch schema["type"] {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", path, v)
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range schema["required"].([]any) {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Errorf("%s: %q missing", path, r)
			}
		}
		for k, x := range o {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if schema["additionalProperties"] == false {
					return fmt.Errorf("%s: extra property %q", path, k)
				}
				continue
			}
			if err := validate(ps, x, path+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", path, v)
		}
		if m, ok := schema["maxItems"].(float64); ok && float64(len(a)) > m {
			return fmt.Errorf("%s: %d items, at most %v", path, len(a), m)
		}
		if m, ok := schema["minItems"].(float64); ok && float64(len(a)) < m {
			return fmt.Errorf("%s: %d items, at least %v", path, len(a), m)
		}
		for i, x := range a {
			if err := validate(schema["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %T, want a string", path, v)
		}
		if m, ok := schema["maxLength"].(float64); ok && float64(utf8.RuneCountInString(s)) > m {
			return fmt.Errorf("%s: %q longer than %v", path, s, m)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", path, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %v, want a boolean", path, v)
		}
	default:
		return fmt.Errorf("%s: the test validator does not know %v", path, schema["type"])
	}
	return nil
}

const storySchema = `{"type":"object","properties":{
	"name":{"type":"string","maxLength":10},
	"age":{"type":"integer"},
	"pet":{"enum":["cat","dog","bird"]},
	"happy":{"type":"boolean"},
	"friends":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":2}},
	"required":["name","age","pet","happy","friends"],"additionalProperties":false}`

func TestStructuredOutput(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 2})
	var schema map[string]any
	if err := json.Unmarshal([]byte(storySchema), &schema); err != nil {
		t.Fatal(err)
	}
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "story", "strict": true, "schema": json.RawMessage(storySchema)}}
	for _, temp := range []float64{0, 1} {
		for seed := 1; seed <= 3; seed++ {
			if temp == 0 && seed > 1 {
				continue
			}
			req := map[string]any{"prompt": "Once upon a time", "max_tokens": 110, "temperature": temp, "seed": seed, "response_format": rf}
			code, _, body := ts.post(t, "/v1/completions", req)
			var c completion
			if code != 200 || json.Unmarshal(body, &c) != nil {
				t.Fatalf("%d %s", code, body)
			}
			text := c.Choices[0].Text
			var v any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Errorf("temperature %g seed %d: %q does not parse: %v (finish %s)", temp, seed, text, err, *c.Choices[0].FinishReason)
				continue
			}
			if err := validate(schema, v, "$"); err != nil {
				t.Errorf("temperature %g seed %d: %q: %v", temp, seed, text, err)
			}
			if *c.Choices[0].FinishReason != "stop" {
				t.Errorf("finish %s", *c.Choices[0].FinishReason)
			}
			t.Logf("temperature %g seed %d: %s", temp, seed, text)
		}
	}
	// Chat with json_object, whole and streamed: the same text, which the object grammar
	// accepts; it parses as an object when it ended by itself (stories260K's free strings run
	// to max_tokens first: json_object bounds nothing, unlike the schema above).
	chat := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Tell me about a cat."}}, "max_tokens": 100,
		"response_format": map[string]any{"type": "json_object"}}
	stops := 0
	for seed := 1; seed <= 6; seed++ {
		chat["seed"] = seed
		delete(chat, "stream")
		code, _, body := ts.post(t, "/v1/chat/completions", chat)
		var c completion
		if code != 200 || json.Unmarshal(body, &c) != nil {
			t.Fatalf("%d %s", code, body)
		}
		text, finish := c.Choices[0].Message.Content, *c.Choices[0].FinishReason
		chat["stream"] = true
		var streamed string
		for _, ch := range streamChoices(t, ts, "/v1/chat/completions", chat) {
			streamed += ch.Delta.Content
		}
		if streamed != text {
			t.Errorf("seed %d: streamed %q, whole %q", seed, streamed, text)
		}
		if m := constrain.JSONObject().NewMatcher(); !m.Accept([]byte(text)) {
			t.Errorf("seed %d: %q is not a prefix of a JSON object", seed, text)
		}
		if finish == "stop" {
			stops++
			var o map[string]any
			if err := json.Unmarshal([]byte(text), &o); err != nil {
				t.Errorf("seed %d: %q: %v", seed, text, err)
			}
		}
		t.Logf("json_object seed %d (%s): %s", seed, finish, text)
	}
	t.Logf("%d of 6 json_object outputs ended by themselves", stops)
}

func TestStructuredOutputBadInput(t *testing.T) {
	ts := startServer(t, serverOpts{ranks: 1})
	msgs := []any{map[string]any{"role": "user", "content": "Hi"}}
	for _, tc := range []struct {
		rf    any
		param string
		want  string
	}{
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "string", "pattern": "^a$"}}}, "response_format.json_schema.schema", "pattern"},
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "integer", "minimum": 1}}}, "response_format.json_schema.schema", "minimum"},
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}, "response_format.json_schema.schema", "needs"},
		{map[string]any{"type": "yaml"}, "response_format.type", "yaml"},
		{"json", "response_format", "want an object"},
	} {
		code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": msgs, "response_format": tc.rf})
		e := errorOf(t, body)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%v: %d %s", tc.rf, code, body)
		}
	}
}
