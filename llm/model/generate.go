package model

import (
	"github.com/gorun-hpc/gorun/llm/sample"
)

// Decoder is what Generate drives: a model on this rank (Model) or a pipeline of them.
type Decoder interface {
	Forward(tokens []int32) error // the tokens at the next positions
	Argmax() (int32, error)       // the greedy token after the last position
	Logits() ([]float32, error)   // the whole vocabulary's logits there, on every rank
}

// Generate feeds the prompt as one batch, then draws up to n tokens one at a time, calling
// emit with each (on every rank) until emit returns false or an error. Greedy parameters use
// the distributed argmax; sampling gathers the logits so that every rank draws the same token
// from the same random stream. All ranks call it with the same arguments.
func (m *Model) Generate(prompt []int32, n int, p sample.Params, emit func(id int32) (bool, error)) error {
	return Generate(m, prompt, n, p, emit)
}

// Generate is Model.Generate for any Decoder.
func Generate(d Decoder, prompt []int32, n int, p sample.Params, emit func(id int32) (bool, error)) error {
	s := sample.New(p)
	history := append([]int32(nil), prompt...)
	if err := d.Forward(prompt); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		var id int32
		if p.Temperature <= 0 && (p.RepeatPenalty == 0 || p.RepeatPenalty == 1) {
			var err error
			if id, err = d.Argmax(); err != nil {
				return err
			}
		} else {
			logits, err := d.Logits()
			if err != nil {
				return err
			}
			id = s.Sample(logits, history)
		}
		history = append(history, id)
		more, err := emit(id)
		if err != nil || !more || i == n-1 {
			return err
		}
		if err := d.Forward([]int32{id}); err != nil {
			return err
		}
	}
	return nil
}
