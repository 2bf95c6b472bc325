package serve

import (
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
	tp := &Template{Name: name, t: t}
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
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.t.Render(map[string]any{
		"messages":              list,
		"add_generation_prompt": true,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
	})
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.Name, err)
	}
	return out, nil
}

// BOSText returns the text of the BOS token, which a rendered prompt may already start with.
func (t *Template) BOSText() string { return t.bos }
