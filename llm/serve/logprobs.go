package serve

import (
	"math"

	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

// MaxTopLogprobs bounds top_logprobs (OpenAI's limit for chat; /v1/completions allows 5).
const MaxTopLogprobs = 20

// TokenLogprob is one generated token's log-probability under the model (the log-softmax of
// its raw logits, before temperature and the other sampling filters), with the most likely
// alternatives at that position.
type TokenLogprob struct {
	ID      int32
	Piece   string // the bytes the token adds to the text
	Logprob float64
	Top     []TopLogprob // most likely first
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	ID      int32
	Piece   string
	Logprob float64
}

// logSoftmax returns the log of the normaliser of logits (log sum exp, in float64), skipping
// NaN entries.
func logSumExp(logits []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		if f := float64(v); f > mx {
			mx = f
		}
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	var sum float64
	for _, v := range logits {
		if f := float64(v); !math.IsNaN(f) {
			sum += math.Exp(f - mx)
		}
	}
	return mx + math.Log(sum)
}

// tokenLogprob computes the logprob of id and the top k alternatives from a row of logits.
func tokenLogprob(tok *tokenizer.Tokenizer, logits []float32, id int32, k int) TokenLogprob {
	z := logSumExp(logits)
	lp := TokenLogprob{ID: id, Piece: tok.TokenPiece(id), Logprob: float64(logits[id]) - z}
	if k <= 0 {
		return lp
	}
	// Insertion into a short list sorted by descending logit (ascending id among equals).
	top := make([]int32, 0, k+1)
	for i, v := range logits {
		if math.IsNaN(float64(v)) {
			continue
		}
		if len(top) == k && v <= logits[top[k-1]] {
			continue
		}
		at := len(top)
		for at > 0 && v > logits[top[at-1]] {
			at--
		}
		top = append(top, 0)
		copy(top[at+1:], top[at:])
		top[at] = int32(i)
		if len(top) > k {
			top = top[:k]
		}
	}
	lp.Top = make([]TopLogprob, len(top))
	for i, t := range top {
		lp.Top[i] = TopLogprob{ID: t, Piece: tok.TokenPiece(t), Logprob: float64(logits[t]) - z}
	}
	return lp
}

// pieceBytes is OpenAI's "bytes": the token's UTF-8 bytes as integers (a token may hold part of
// a character, which its "token" string cannot show).
func pieceBytes(p string) []int {
	b := make([]int, len(p))
	for i := range len(p) {
		b[i] = int(p[i])
	}
	return b
}

// chatLogprobs is a choice's "logprobs" object on /v1/chat/completions.
func chatLogprobs(lps []TokenLogprob) map[string]any {
	content := make([]any, len(lps))
	for i, lp := range lps {
		top := make([]any, len(lp.Top))
		for k, t := range lp.Top {
			top[k] = map[string]any{"token": t.Piece, "logprob": t.Logprob, "bytes": pieceBytes(t.Piece)}
		}
		content[i] = map[string]any{"token": lp.Piece, "logprob": lp.Logprob, "bytes": pieceBytes(lp.Piece), "top_logprobs": top}
	}
	return map[string]any{"content": content, "refusal": nil}
}

// completionLogprobs is a choice's legacy "logprobs" object on /v1/completions; offset is the
// text offset of the first token.
func completionLogprobs(lps []TokenLogprob, offset int) map[string]any {
	tokens := make([]string, len(lps))
	lp := make([]float64, len(lps))
	tops := make([]map[string]float64, len(lps))
	offs := make([]int, len(lps))
	for i, t := range lps {
		tokens[i], lp[i], offs[i] = t.Piece, t.Logprob, offset
		offset += len(t.Piece)
		tops[i] = map[string]float64{}
		for _, a := range t.Top {
			if _, dup := tops[i][a.Piece]; !dup {
				tops[i][a.Piece] = a.Logprob
			}
		}
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lp, "top_logprobs": tops, "text_offset": offs}
}
