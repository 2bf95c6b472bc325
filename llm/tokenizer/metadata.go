package tokenizer

import (
	"errors"
	"fmt"
	"math"
)

// Metadata is what VocabFromMetadata needs of a GGUF reader: typed getters that fail for an
// absent key with an error wrapping a known sentinel. llm/gguf's *File has these methods (its
// sentinel is gguf.ErrNotFound); this package does not import it.
type Metadata interface {
	String(key string) (string, error)
	Strings(key string) ([]string, error)
	Float32s(key string) ([]float32, error)
	Int32s(key string) ([]int32, error)
	Uint(key string) (uint64, error)
	Bool(key string) (bool, error)
}

// GGUF metadata keys of the tokenizer.
const (
	KeyModel          = "tokenizer.ggml.model"
	KeyPre            = "tokenizer.ggml.pre"
	KeyTokens         = "tokenizer.ggml.tokens"
	KeyScores         = "tokenizer.ggml.scores"
	KeyTokenType      = "tokenizer.ggml.token_type"
	KeyMerges         = "tokenizer.ggml.merges"
	KeyBOS            = "tokenizer.ggml.bos_token_id"
	KeyEOS            = "tokenizer.ggml.eos_token_id"
	KeyUNK            = "tokenizer.ggml.unknown_token_id"
	KeyPAD            = "tokenizer.ggml.padding_token_id"
	KeyEOT            = "tokenizer.ggml.eot_token_id"
	KeyAddBOS         = "tokenizer.ggml.add_bos_token"
	KeyAddEOS         = "tokenizer.ggml.add_eos_token"
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// VocabFromMetadata reads a Vocab from GGUF metadata: llama.cpp's defaults for the model and
// pre-tokenizer (NewVocab), overridden by the keys present. notFound is the sentinel the
// getters wrap for an absent key (gguf.ErrNotFound); any other error, such as a key of the
// wrong type, is returned. Call New on the result.
func VocabFromMetadata(md Metadata, notFound error) (Vocab, error) {
	absent := func(err error) bool { return errors.Is(err, notFound) }
	model, err := md.String(KeyModel)
	if err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	pre, err := md.String(KeyPre)
	if err != nil && !absent(err) {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	v := NewVocab(model, pre)
	if v.Tokens, err = md.Strings(KeyTokens); err != nil {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	if v.Scores, err = md.Float32s(KeyScores); err != nil && !absent(err) {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	if v.Types, err = md.Int32s(KeyTokenType); err != nil && !absent(err) {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	if v.Merges, err = md.Strings(KeyMerges); err != nil && !absent(err) {
		return Vocab{}, fmt.Errorf("tokenizer: %w", err)
	}
	for _, e := range []struct {
		key string
		p   *int32
	}{{KeyBOS, &v.BOS}, {KeyEOS, &v.EOS}, {KeyUNK, &v.UNK}, {KeyPAD, &v.PAD}, {KeyEOT, &v.EOT}} {
		x, err := md.Uint(e.key)
		switch {
		case absent(err):
		case err != nil:
			return Vocab{}, fmt.Errorf("tokenizer: %w", err)
		case x == math.MaxUint32: // llama.cpp writes -1 as uint32 for "none"
			*e.p = -1
		case x > math.MaxInt32:
			return Vocab{}, fmt.Errorf("tokenizer: %s = %d is not a token id", e.key, x)
		default:
			*e.p = int32(x)
		}
	}
	for _, e := range []struct {
		key string
		p   *bool
	}{{KeyAddBOS, &v.AddBOS}, {KeyAddEOS, &v.AddEOS}, {KeyAddSpacePrefix, &v.AddSpacePrefix}} {
		b, err := md.Bool(e.key)
		switch {
		case absent(err):
		case err != nil:
			return Vocab{}, fmt.Errorf("tokenizer: %w", err)
		default:
			*e.p = b
		}
	}
	return v, nil
}

// FromMetadata is VocabFromMetadata followed by New.
func FromMetadata(md Metadata, notFound error) (*Tokenizer, error) {
	v, err := VocabFromMetadata(md, notFound)
	if err != nil {
		return nil, err
	}
	return New(v)
}
