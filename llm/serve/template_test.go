package serve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

func vocabWith(t *testing.T, special ...string) *tokenizer.Tokenizer {
	t.Helper()
	v := tokenizer.NewVocab("llama", "default")
	v.Tokens = append([]string{"<unk>", "<s>", "</s>"}, special...)
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("<0x%02X>", b))
	}
	v.Types = make([]int32, len(v.Tokens))
	for i := range v.Types {
		switch {
		case i == 0:
			v.Types[i] = int32(tokenizer.TypeUnknown)
		case i < 3+len(special):
			v.Types[i] = int32(tokenizer.TypeControl)
		default:
			v.Types[i] = int32(tokenizer.TypeByte)
		}
	}
	v.UNK, v.BOS, v.EOS = 0, 1, 2
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// "auto" takes the model's template, else the built-in whose special tokens the vocabulary
// has; each built-in renders the format its models were trained on.
func TestTemplates(t *testing.T) {
	conv := []Message{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Tell me"}}
	for _, c := range []struct {
		name    string
		tok     *tokenizer.Tokenizer
		spec    string
		gguf    string
		want    string
		wantOut string
	}{
		{"llama2 by default", vocabWith(t), "auto", "", "llama2",
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Tell me [/INST]"},
		{"chatml by vocabulary", vocabWith(t, "<|im_start|>", "<|im_end|>"), "auto", "", "chatml",
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nTell me<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3 by vocabulary", vocabWith(t, "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"), "", "", "llama3",
			"<s><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"forced chatml", vocabWith(t), "chatml", "", "chatml", "<|im_start|>system\nBe brief.<|im_end|>\n"},
		// A model's own template, in the style of Hugging Face's (Zephyr's), with a namespace
		// and filters.
		{"the model's", vocabWith(t), "auto",
			"{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] | trim + eos_token + '\\n' }}" +
				"{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}", "gguf",
			"<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello</s>\n<|user|>\nTell me</s>\n<|assistant|>\n"},
	} {
		tp, err := NewTemplate(c.spec, c.gguf, c.tok)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tp.Name != c.want {
			t.Errorf("%s: template %s, want %s", c.name, tp.Name, c.want)
		}
		out, err := tp.Render(conv)
		if err != nil || !strings.HasPrefix(out, c.wantOut) || (c.spec != "chatml" && out != c.wantOut) {
			t.Errorf("%s: %q %v\nwant %q", c.name, out, err, c.wantOut)
		}
	}
	// A template that refuses a conversation makes Render fail, naming the template.
	strict, err := NewTemplate("auto", "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversation must start with a user message') }}{% endif %}ok", vocabWith(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strict.Render(conv); err == nil || !strings.Contains(err.Error(), "must start with a user") {
		t.Errorf("raise_exception: %v", err)
	}
	for _, bad := range []struct{ spec, gguf, want string }{
		{"vicuna", "", `chat template "vicuna"`},
		{"gguf", "", "no tokenizer.chat_template"},
		{"auto", "{% for %}", "chat template gguf"},
	} {
		if _, err := NewTemplate(bad.spec, bad.gguf, vocabWith(t)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewTemplate(%q, %q): %v, want %q", bad.spec, bad.gguf, err, bad.want)
		}
	}
}
