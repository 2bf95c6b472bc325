package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Tools on /v1/messages: Anthropic's tools ({name, description, input_schema}), tool_choice
// ({type: auto, any, tool, none}), tool_use blocks in assistant messages and tool_result blocks
// in user messages, mapped onto the chat route's tools, turns, template and tool-call
// parsers and grammars.

// anthropicTools reads tools: [{"name", "description", "input_schema"}] (custom tools only).
func anthropicTools(raw json.RawMessage) ([]tool, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, badRequest("invalid_type", "tools", "tools: want an array of {\"name\", \"description\", \"input_schema\"}")
	}
	if len(list) > maxTools {
		return nil, badRequest("invalid_value", "tools", "tools: %d tools, at most %d", len(list), maxTools)
	}
	tools := make([]tool, len(list))
	seen := map[string]bool{}
	for i, r := range list {
		p := fmt.Sprintf("tools.%d", i)
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		var schema map[string]any
		switch {
		case json.Unmarshal(r, &t) != nil:
			return nil, badRequest("invalid_type", p, "%s: want an object {\"name\", \"description\", \"input_schema\"}", p)
		case t.Type != "" && t.Type != "custom":
			return nil, badRequest("invalid_value", p+".type", "%s.type = %q: only custom tools are served here", p, t.Type)
		case !validFunctionName(t.Name):
			return nil, badRequest("invalid_value", p+".name", "%s.name = %q: want 1..64 of a-z, A-Z, 0-9, _ and -", p, t.Name)
		case seen[t.Name]:
			return nil, badRequest("invalid_value", p+".name", "%s: the tool %q is defined twice", p, t.Name)
		case len(t.InputSchema) == 0 || json.Unmarshal(t.InputSchema, &schema) != nil:
			return nil, badRequest("invalid_value", p+".input_schema", "%s.input_schema: want a JSON Schema object", p)
		}
		seen[t.Name] = true
		fn := map[string]any{"name": t.Name, "parameters": schema}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		tools[i] = tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
			raw: map[string]any{"type": "function", "function": fn}}
	}
	return tools, nil
}

// anthropicToolChoice reads tool_choice: auto (the default with tools), any (some tool must be
// called: "required"), tool with a name, or none; and whether parallel calls are allowed.
func anthropicToolChoice(raw json.RawMessage, tools []tool) (toolChoice, bool, *apiError) {
	tc := toolChoice{mode: "auto"}
	if len(tools) == 0 {
		tc.mode = "none"
	}
	if len(raw) == 0 || string(raw) == "null" {
		return tc, true, nil
	}
	var c struct {
		Type            string `json:"type"`
		Name            string `json:"name"`
		DisableParallel bool   `json:"disable_parallel_tool_use"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return tc, false, badRequest("invalid_type", "tool_choice", "tool_choice: want {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}")
	}
	switch c.Type {
	case "auto", "none":
		tc.mode = c.Type
	case "any":
		tc.mode = "required"
	case "tool":
		tc.mode, tc.name = "function", c.Name
		found := false
		for _, t := range tools {
			found = found || t.Name == c.Name
		}
		if !found {
			return tc, false, badRequest("invalid_value", "tool_choice.name", "tool_choice names the tool %q, which is not among the tools", c.Name)
		}
	default:
		return tc, false, badRequest("invalid_value", "tool_choice.type", "tool_choice.type = %q: want auto, any, tool or none", c.Type)
	}
	if tc.mode != "none" && len(tools) == 0 {
		return tc, false, badRequest("invalid_value", "tool_choice", "tool_choice %q without tools", c.Type)
	}
	return tc, !c.DisableParallel, nil
}

// anthropicTurns turns messages into chat turns: an assistant message's text and tool_use
// blocks become one turn with tool calls; a user message's tool_result blocks become tool
// turns (each answering a tool_use of an earlier message), its text a user turn after them.
func anthropicTurns(msgs []anthropicMsg) ([]turn, *apiError) {
	var turns []turn
	called := map[string]bool{}
	for i, m := range msgs {
		p := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest("invalid_value", p+".role", "%s.role = %q: want user or assistant", p, m.Role)
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			turns = append(turns, turn{Message: Message{Role: m.Role, Content: s}})
			continue
		}
		var blocks []json.RawMessage
		if json.Unmarshal(m.Content, &blocks) != nil {
			return nil, badRequest("invalid_type", p+".content", "%s.content: want a string or an array of content blocks", p)
		}
		var text strings.Builder
		var calls []ToolCall
		var results []turn
		for k, raw := range blocks {
			bp := fmt.Sprintf("%s.content.%d", p, k)
			var b struct {
				Type      string          `json:"type"`
				Text      *string         `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			if json.Unmarshal(raw, &b) != nil {
				return nil, badRequest("invalid_type", bp, "%s: want a content block object", bp)
			}
			switch b.Type {
			case "text":
				if b.Text == nil {
					return nil, badRequest("invalid_value", bp+".text", "%s: a text block needs text", bp)
				}
				text.WriteString(*b.Text)
			case "tool_use":
				var input map[string]any
				switch {
				case m.Role != "assistant":
					return nil, badRequest("invalid_value", bp, "%s: tool_use blocks belong to assistant messages", bp)
				case b.ID == "":
					return nil, badRequest("invalid_value", bp+".id", "%s: a tool_use block needs an id", bp)
				case called[b.ID]:
					return nil, badRequest("invalid_value", bp+".id", "%s: the tool_use id %q is used twice", bp, b.ID)
				case !validFunctionName(b.Name):
					return nil, badRequest("invalid_value", bp+".name", "%s.name = %q is not a tool name", bp, b.Name)
				case json.Unmarshal(b.Input, &input) != nil || input == nil:
					return nil, badRequest("invalid_value", bp+".input", "%s.input: want a JSON object", bp)
				}
				var args bytes.Buffer
				json.Compact(&args, b.Input)
				called[b.ID] = true
				calls = append(calls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args.String()})
			case "tool_result":
				switch {
				case m.Role != "user":
					return nil, badRequest("invalid_value", bp, "%s: tool_result blocks belong to user messages", bp)
				case b.ToolUseID == "" || !called[b.ToolUseID]:
					return nil, badRequest("invalid_value", bp+".tool_use_id", "%s.tool_use_id = %q answers no tool_use block of an earlier assistant message", bp, b.ToolUseID)
				}
				out := ""
				if len(b.Content) > 0 && string(b.Content) != "null" {
					var ok bool
					if out, ok = anthropicText(b.Content); !ok {
						return nil, badRequest("invalid_type", bp+".content", "%s.content: want a string or an array of text blocks", bp)
					}
				}
				if b.IsError {
					out = "Error: " + out
				}
				results = append(results, turn{Message: Message{Role: "tool", Content: out}, ToolCallID: b.ToolUseID})
			default:
				return nil, badRequest("invalid_value", bp+".type", "%s.type = %q: want text, tool_use or tool_result", bp, b.Type)
			}
		}
		turns = append(turns, results...)
		switch {
		case m.Role == "assistant":
			turns = append(turns, turn{Message: Message{Role: "assistant", Content: text.String()}, ToolCalls: calls})
		case text.Len() > 0 || len(results) == 0:
			turns = append(turns, turn{Message: Message{Role: "user", Content: text.String()}})
		}
	}
	return turns, nil
}

// anthropicContent is a reply's content blocks: its text (when there is any, or when there
// are no calls), then a tool_use block per call.
func anthropicContent(text string, calls []ToolCall) []any {
	var out []any
	if text != "" || len(calls) == 0 {
		out = append(out, map[string]any{"type": "text", "text": text})
	}
	for _, c := range calls {
		out = append(out, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	return out
}

// anthropicCalls parses a reply's tool calls, with Anthropic's toolu_ ids.
func anthropicCalls(text string, tools []tool) (string, []ToolCall) {
	content, calls := parseToolCalls(text, tools)
	if len(calls) == 0 {
		return text, nil
	}
	for i := range calls {
		calls[i].ID = "toolu_" + strings.TrimPrefix(calls[i].ID, "call_")
	}
	return content, calls
}

// jsonPieces splits JSON text into pieces of about n bytes at character boundaries, as
// input_json_delta events carry it.
func jsonPieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		k := n
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		if k == 0 {
			k = n
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return append(out, s)
}
