package model

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

// LoadTokenizer builds the tokenizer described by f's tokenizer.ggml.* metadata, with
// llama.cpp's defaults for absent keys.
func LoadTokenizer(f *gguf.File) (*tokenizer.Tokenizer, error) {
	tm, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	pre, err := f.String("tokenizer.ggml.pre")
	if errors.Is(err, gguf.ErrNotFound) {
		pre = "default"
	} else if err != nil {
		return nil, err
	}
	v := tokenizer.NewVocab(tm, pre)
	if v.Tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return nil, err
	}
	optional := func(err error) error {
		if errors.Is(err, gguf.ErrNotFound) {
			return nil
		}
		return err
	}
	if v.Scores, err = f.Float32s("tokenizer.ggml.scores"); optional(err) != nil {
		return nil, err
	}
	if v.Types, err = f.Int32s("tokenizer.ggml.token_type"); optional(err) != nil {
		return nil, err
	}
	if v.Merges, err = f.Strings("tokenizer.ggml.merges"); optional(err) != nil {
		return nil, err
	}
	for key, dst := range map[string]*int32{"bos": &v.BOS, "eos": &v.EOS, "unknown": &v.UNK, "padding": &v.PAD, "eot": &v.EOT} {
		kv, ok := f.Get("tokenizer.ggml." + key + "_token_id")
		if !ok {
			continue
		}
		switch x := kv.Value.(type) {
		case uint32:
			*dst = int32(x) // 0xFFFFFFFF means absent and becomes -1
		case int32:
			*dst = x
		default:
			return nil, fmt.Errorf("%s: tokenizer.ggml.%s_token_id is %s, want uint32", f.Path, key, kv.Type)
		}
	}
	for key, dst := range map[string]*bool{"add_bos_token": &v.AddBOS, "add_eos_token": &v.AddEOS, "add_space_prefix": &v.AddSpacePrefix} {
		b, err := f.Bool("tokenizer.ggml." + key)
		if err == nil {
			*dst = b
		} else if optional(err) != nil {
			return nil, err
		}
	}
	t, err := tokenizer.New(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return t, nil
}
