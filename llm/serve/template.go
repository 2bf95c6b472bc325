package serve

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

// Built-in chat formats for models whose file carries no tokenizer.chat_template, written as
// Jinja so that they go through the same renderer as a model's own template.
var builtinTemplates = map[string]string{
	// Llama 2 chat: the system prompt inside the first [INST] block.
	"llama2": `{% if messages and messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}{% set turns = messages[1:] %}` +
		`{% else %}{% set system = '' %}{% set turns = messages %}{% endif %}` +
		`{% for message in turns %}{% if message['role'] == 'user' %}{{ bos_token }}[INST] ` +
		"{% if loop.first and system %}<<SYS>>\n{{ system }}\n<</SYS>>\n\n{% endif %}{{ message['content'] | trim }} [/INST]" +
		`{% elif message['role'] == 'assistant' %} {{ message['content'] | trim }} {{ eos_token }}{% endif %}{% endfor %}`,
	// Llama 3 instruct.
	"llama3": `{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>

{{ message['content'] | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}`,
	// ChatML (Qwen, many fine-tunes).
	"chatml": `{% for message in messages %}<|im_start|>{{ message['role'] }}
{{ message['content'] }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`,
}

// BuiltinTemplateNames lists the fallback chat formats.
func BuiltinTemplateNames() []string { return []string{"llama2", "llama3", "chatml"} }

// Template renders chat messages into a prompt.
type Template struct {
	Name string // "gguf" for the model's own, else the built-in's name
	t    *jinja.Template
	src  string
	bos  string
	eos  string
}

// Message is one chat message.
type Message struct {
	Role    string
	Content string
}

// NewTemplate compiles the chat template: spec "" or "auto" takes the model's own
// (tokenizer.chat_template, given as modelTemplate) and otherwise the built-in format whose
// special tokens the vocabulary has (chatml, llama3, else llama2); a built-in's name forces it.
func NewTemplate(spec, modelTemplate string, tok *tokenizer.Tokenizer) (*Template, error) {
	name, src := spec, ""
	switch spec {
	case "", "auto":
		switch {
		case modelTemplate != "":
			name, src = "gguf", modelTemplate
		case hasToken(tok, "<|im_start|>"):
			name = "chatml"
		case hasToken(tok, "<|start_header_id|>"):
			name = "llama3"
		default:
			name = "llama2"
		}
	case "gguf":
		if modelTemplate == "" {
			return nil, fmt.Errorf("chat template: the model has no tokenizer.chat_template (built-in: %s)", strings.Join(BuiltinTemplateNames(), ", "))
		}
		src = modelTemplate
	}
	if src == "" {
		var ok bool
		if src, ok = builtinTemplates[name]; !ok {
			return nil, fmt.Errorf("chat template %q: want auto, gguf or one of %s", spec, strings.Join(BuiltinTemplateNames(), ", "))
		}
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", name, err)
	}
	tp := &Template{Name: name, t: t, src: src}
	if tok != nil {
		if id := tok.BOS(); id >= 0 {
			tp.bos = tok.TokenText(id)
		}
		if id := tok.EOS(); id >= 0 {
			tp.eos = tok.TokenText(id)
		}
	}
	return tp, nil
}

func hasToken(tok *tokenizer.Tokenizer, text string) bool {
	if tok == nil {
		return false
	}
	_, ok := tok.TokenID(text)
	return ok
}

// Render formats the conversation and opens the assistant's turn.
func (t *Template) Render(msgs []Message) (string, error) {
	turns := make([]turn, len(msgs))
	for i, m := range msgs {
		turns[i] = turn{Message: m}
	}
	return t.render(turns, nil)
}

// turn is a message with the tool fields of a conversation that uses tools.
type turn struct {
	Message
	ToolCalls  []ToolCall // an assistant's calls
	ToolCallID string     // a tool message's answer to
}

// render formats turns with tools: a template that knows tools gets them as Hugging Face's
// templates expect (tools, tool_calls with parsed arguments, tool messages); for one that does
// not, the tools are described in the system message and calls and results are written in the
// Hermes format inside ordinary turns.
func (t *Template) render(turns []turn, tools []tool) (string, error) {
	native := t.nativeTools()
	var list []any
	if len(tools) > 0 && !native {
		sys := toolPrompt(tools)
		if len(turns) > 0 && turns[0].Role == "system" {
			sys = turns[0].Content + "\n\n" + sys
			turns = turns[1:]
		}
		list = append(list, map[string]any{"role": "system", "content": sys})
	}
	for _, m := range turns {
		msg := map[string]any{"role": m.Role, "content": m.Content}
		switch {
		case native && len(m.ToolCalls) > 0:
			calls := make([]any, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				var args any
				json.Unmarshal([]byte(c.Arguments), &args)
				calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
			}
			msg["tool_calls"] = calls
		case native && m.Role == "tool":
			msg["tool_call_id"] = m.ToolCallID
		case len(m.ToolCalls) > 0:
			var b strings.Builder
			b.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				fmt.Fprintf(&b, "<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", c.Name, c.Arguments)
			}
			msg["content"] = b.String()
		case m.Role == "tool":
			msg["role"], msg["content"] = "user", "<tool_response>\n"+m.Content+"\n</tool_response>"
		}
		list = append(list, msg)
	}
	vars := map[string]any{
		"messages":              list,
		"add_generation_prompt": true,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
	}
	if native && len(tools) > 0 {
		raw := make([]any, len(tools))
		for i, tl := range tools {
			raw[i] = tl.raw
		}
		vars["tools"] = raw
	}
	out, err := t.t.Render(vars)
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.Name, err)
	}
	return out, nil
}

// BOSText returns the text of the BOS token, which a rendered prompt may already start with.
func (t *Template) BOSText() string { return t.bos }
