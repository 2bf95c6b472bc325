package constrain

import (
	"encoding/json"
	"fmt"
)

// Tool is a function the model may call: its name and its parameters' JSON schema (nil: any
// object).
type Tool struct {
	Name       string
	Parameters []byte
}

// Tool-call formats, as current models write them.
const (
	FormatHermes  = "hermes"  // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Hermes, Qwen)
	FormatLlama3  = "llama3"  // {"name": ..., "parameters": {...}}, several separated by "; " (Llama 3.x)
	FormatMistral = "mistral" // [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (Mistral)
)

// MaxParallelCalls bounds the calls of one reply, so that a model that would call on without
// end (a small one may) stops.
const MaxParallelCalls = 4

// ToolCalls is the grammar of output that is only tool calls in the given format: one (or,
// with parallel, 1..MaxParallelCalls) of tools, each call's arguments valid under its parameters'
// schema. An error names the tool whose schema the grammar cannot express.
func ToolCalls(format string, tools []Tool, parallel bool) (*Grammar, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("tool calls: no tools")
	}
	b := newBuilder()
	top := b.rule("root")
	argsKey := `"arguments"`
	if format == FormatLlama3 {
		argsKey = `"parameters"`
	}
	var alts [][]elem
	for i, t := range tools {
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object"}`)
		}
		c := &compiler{b: b, refs: map[string]int32{}, common: map[string]elem{}}
		root, err := decodeSchema(params)
		if err != nil {
			return nil, fmt.Errorf("tool %d (%s): %w", i, t.Name, err)
		}
		c.root = root
		args, err := c.value(root, "#", 0)
		if err != nil {
			return nil, fmt.Errorf("tool %d (%s): %w", i, t.Name, err)
		}
		name, _ := json.Marshal(t.Name)
		alts = append(alts, seq(b.lit(`{"name": `+string(name)+`, `+argsKey+`: `), args, b.lit("}")))
	}
	call := b.def("call", alts...)
	var body []elem
	switch format {
	case FormatHermes:
		one := b.def("hermes call", seq(b.lit("<tool_call>\n"), call, b.lit("\n</tool_call>")))
		body = []elem{one}
		if parallel {
			body = append(body, b.repeat("more calls", b.def("next call", seq(b.lit("\n"), one)), 0, MaxParallelCalls-1))
		}
	case FormatLlama3:
		body = []elem{call}
		if parallel {
			body = append(body, b.repeat("more calls", b.def("next call", seq(b.lit("; "), call)), 0, MaxParallelCalls-1))
		}
	case FormatMistral:
		body = seq(b.lit("[TOOL_CALLS]["), call)
		if parallel {
			body = append(body, b.repeat("more calls", b.def("next call", seq(b.lit(", "), call)), 0, MaxParallelCalls-1))
		}
		body = append(body, b.lit("]")...)
	default:
		return nil, fmt.Errorf("tool calls: unknown format %q", format)
	}
	b.define(top, seq(b.opt("lead", b.lit(" ")), body))
	if len(b.g.rules) > maxRules {
		return nil, &SchemaError{Msg: fmt.Sprintf("the tools need %d grammar rules, over the limit of %d", len(b.g.rules), maxRules)}
	}
	return b.g, nil
}
