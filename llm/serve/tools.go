package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/gorun-hpc/gorun/llm/serve/constrain"
)

// tool is a function a chat request offers the model.
type tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	raw         map[string]any // as the request gave it, for the chat template
}

// ToolCall is a call the model made (or an assistant message of the conversation holds).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// toolChoice is tool_choice: "none", "auto", "required", or a named function.
type toolChoice struct {
	mode string
	name string
}

const maxTools = 128

// parseTools reads tools: [{"type": "function", "function": {"name", "description",
// "parameters"}}].
func parseTools(raw json.RawMessage) ([]tool, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, badRequest("invalid_type", "tools", "tools: want an array of {\"type\": \"function\", \"function\": {...}}")
	}
	if len(list) > maxTools {
		return nil, badRequest("invalid_value", "tools", "tools: %d tools, at most %d", len(list), maxTools)
	}
	tools := make([]tool, len(list))
	seen := map[string]bool{}
	for i, r := range list {
		param := fmt.Sprintf("tools[%d]", i)
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		var rawMap map[string]any
		if json.Unmarshal(r, &t) != nil || json.Unmarshal(r, &rawMap) != nil {
			return nil, badRequest("invalid_type", param, "%s: want an object {\"type\": \"function\", \"function\": {...}}", param)
		}
		switch {
		case t.Type != "function":
			return nil, badRequest("invalid_value", param+".type", "%s.type = %q: want \"function\"", param, t.Type)
		case t.Function == nil:
			return nil, badRequest("invalid_value", param+".function", "%s has no function", param)
		case !validFunctionName(t.Function.Name):
			return nil, badRequest("invalid_value", param+".function.name", "%s.function.name = %q: want 1..64 of a-z, A-Z, 0-9, _ and -", param, t.Function.Name)
		case seen[t.Function.Name]:
			return nil, badRequest("invalid_value", param+".function.name", "%s: the function %q is defined twice", param, t.Function.Name)
		}
		seen[t.Function.Name] = true
		tools[i] = tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters, raw: rawMap}
	}
	return tools, nil
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func validFunctionName(s string) bool { return functionName.MatchString(s) }

// parseToolChoice reads tool_choice; without tools only "none" (or nothing) makes sense.
func parseToolChoice(raw json.RawMessage, tools []tool) (toolChoice, *apiError) {
	tc := toolChoice{mode: "auto"}
	if len(tools) == 0 {
		tc.mode = "none"
	}
	if len(raw) == 0 || string(raw) == "null" {
		return tc, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			tc.mode = s
		default:
			return tc, badRequest("invalid_value", "tool_choice", "tool_choice = %q: want none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}", s)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
			return tc, badRequest("invalid_value", "tool_choice", "tool_choice: want none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		tc.mode, tc.name = "function", named.Function.Name
		found := false
		for _, t := range tools {
			found = found || t.Name == tc.name
		}
		if !found {
			return tc, badRequest("invalid_value", "tool_choice", "tool_choice names the function %q, which is not among the tools", tc.name)
		}
	}
	if tc.mode != "none" && len(tools) == 0 {
		return tc, badRequest("invalid_value", "tool_choice", "tool_choice %q without tools", tc.mode)
	}
	return tc, nil
}

// toolGrammar is the grammar that forces tool calls (tool_choice required or a named
// function), in the model's format, with each call's arguments valid under its schema.
func toolGrammar(format string, tools []tool, tc toolChoice, parallel bool) (*constrain.Grammar, *apiError) {
	var specs []constrain.Tool
	for _, t := range tools {
		if tc.mode == "function" && t.Name != tc.name {
			continue
		}
		specs = append(specs, constrain.Tool{Name: t.Name, Parameters: t.Parameters})
	}
	g, err := constrain.ToolCalls(format, specs, parallel && tc.mode != "function")
	if err != nil {
		return nil, badRequest("invalid_value", "tools", "tools: the function's parameters cannot be enforced: %v", err)
	}
	return g, nil
}

// toolFormat is the format a template's model writes tool calls in.
func (t *Template) toolFormat() string {
	switch {
	case strings.Contains(t.src, "[TOOL_CALLS]"):
		return constrain.FormatMistral
	case strings.Contains(t.src, "<|python_tag|>") || strings.Contains(t.src, "ipython"):
		return constrain.FormatLlama3
	}
	return constrain.FormatHermes
}

// nativeTools reports whether the template renders tools itself.
func (t *Template) nativeTools() bool { return t.Name == "gguf" && strings.Contains(t.src, "tools") }

// toolPrompt is the system text that offers tools to a model whose template has no place for
// them, in the Hermes format that parseToolCalls reads back.
func toolPrompt(tools []tool) string {
	var b strings.Builder
	b.WriteString("You may call one or more functions. The functions are:\n<tools>\n")
	for _, t := range tools {
		j, _ := json.Marshal(t.raw)
		b.Write(j)
		b.WriteByte('\n')
	}
	b.WriteString("</tools>\nTo call functions, reply with one block per call:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
	return b.String()
}

var (
	hermesCall = regexp.MustCompile(`(?s)<tool_call>\s*(.*?)\s*</tool_call>`)
)

// parseToolCalls finds the tool calls in a model's reply, in any of the formats (Hermes/Qwen
// <tool_call> blocks, Mistral's [TOOL_CALLS] array, Llama 3's bare JSON objects), keeping only
// calls of the offered functions; content is the rest of the reply.
func parseToolCalls(text string, tools []tool) (content string, calls []ToolCall) {
	known := map[string]bool{}
	for _, t := range tools {
		known[t.Name] = true
	}
	call := func(raw []byte) (ToolCall, bool) {
		var c struct {
			Name       string          `json:"name"`
			Arguments  json.RawMessage `json:"arguments"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &c) != nil || !known[c.Name] {
			return ToolCall{}, false
		}
		args := c.Arguments
		if len(args) == 0 {
			args = c.Parameters
		}
		var s string
		if json.Unmarshal(args, &s) == nil { // arguments given as a JSON string
			args = []byte(s)
		}
		var buf bytes.Buffer
		if len(args) == 0 {
			args = []byte("{}")
		}
		if json.Compact(&buf, args) != nil {
			return ToolCall{}, false
		}
		return ToolCall{ID: newCallID(), Name: c.Name, Arguments: buf.String()}, true
	}
	if ms := hermesCall.FindAllStringSubmatchIndex(text, -1); len(ms) > 0 {
		var rest strings.Builder
		last := 0
		for _, m := range ms {
			c, ok := call([]byte(text[m[2]:m[3]]))
			if !ok {
				continue
			}
			calls = append(calls, c)
			rest.WriteString(text[last:m[0]])
			last = m[1]
		}
		rest.WriteString(text[last:])
		return strings.TrimSpace(rest.String()), calls
	}
	if i := strings.Index(text, "[TOOL_CALLS]"); i >= 0 {
		var list []json.RawMessage
		d := json.NewDecoder(strings.NewReader(text[i+len("[TOOL_CALLS]"):]))
		if d.Decode(&list) == nil {
			for _, r := range list {
				if c, ok := call(r); ok {
					calls = append(calls, c)
				}
			}
			if len(calls) > 0 {
				return strings.TrimSpace(text[:i]), calls
			}
		}
	}
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>"))
	if strings.HasPrefix(body, "{") {
		for _, part := range splitTopLevel(body) {
			c, ok := call([]byte(part))
			if !ok {
				return text, nil
			}
			calls = append(calls, c)
		}
		return "", calls
	}
	return text, nil
}

// splitTopLevel splits "{...}; {...}" into its JSON objects (or returns the text whole).
func splitTopLevel(s string) []string {
	d := json.NewDecoder(strings.NewReader(s))
	var out []string
	for {
		var r json.RawMessage
		if err := d.Decode(&r); err != nil {
			return []string{s}
		}
		out = append(out, string(r))
		rest := strings.TrimSpace(s[d.InputOffset():])
		if rest == "" {
			return out
		}
		if !strings.HasPrefix(rest, ";") {
			return []string{s}
		}
		rest = strings.TrimSpace(rest[1:])
		s = rest
		d = json.NewDecoder(strings.NewReader(s))
	}
}

func newCallID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// toolCallsJSON is an assistant message's "tool_calls".
func toolCallsJSON(calls []ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
	}
	return out
}
