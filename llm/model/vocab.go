package model

import (
	"fmt"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

// LoadTokenizer builds the tokenizer described by f's tokenizer.ggml.* metadata
// (tokenizer.FromMetadata, with llama.cpp's defaults for absent keys), naming f in errors.
func LoadTokenizer(f *gguf.File) (*tokenizer.Tokenizer, error) {
	t, err := tokenizer.FromMetadata(f, gguf.ErrNotFound)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return t, nil
}
