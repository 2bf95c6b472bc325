package model

import (
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/quant"
)

// moeLayer is one rank's part of a mixture-of-experts block. Expert parallelism: the router
// is replicated, so every rank picks the same experts for every token; a rank holds whole
// routed experts [E0,E1) and runs only the tokens routed to them; the shared expert, if any,
// is split by hidden units like the dense MLP (in layer.gate/up/down). The partial outputs
// are summed by the block's one allreduce.
type moeLayer struct {
	router         *quant.Matrix   // ffn_gate_inp: Experts rows of Dim
	gate, up, down []*quant.Matrix // local experts E0..E1-1
	shGate         []float32       // ffn_gate_inp_shexp (Dim), nil without a gated shared expert
	bias           []float32       // exp_probs_b: added to the scores for the choice only (nil: none)
	normTopK       bool
	sigmoid        bool
	scale          float32 // 0: 1
}

// expert binds expert e of a 3-D tensor of shape [cols, rows, n]: its rows*cols block. With
// one rank it is the mapping; with several it is read with pread so that only this rank's
// experts become resident.
func (m *Model) expert(name string, cols, rows, n, e int) (*quant.Matrix, error) {
	t, err := m.tensor(name, cols, rows, n)
	if err != nil {
		return nil, err
	}
	rb, err := t.Type.RowBytes(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", m.file.Path, name, err)
	}
	off, size := int64(e)*int64(rows)*rb, int64(rows)*rb
	var b []byte
	if m.Shard.Size > 1 {
		b = make([]byte, size)
		err = m.file.ReadAt(t, b, off)
	} else {
		b, err = m.file.Bytes(t, off, size)
	}
	if err != nil {
		return nil, err
	}
	return quant.NewMatrix(t.Type, rows, cols, b)
}

// bindMoE binds layer L's router, this rank's routed experts and its slice of the shared
// expert; p is the layer's tensor name prefix.
func (m *Model) bindMoE(L *layer, p string) error {
	c, s := &m.Cfg, &m.Shard
	e := &moeLayer{normTopK: L.block.MoE.NormTopK, sigmoid: L.block.MoE.Sigmoid, scale: L.block.MoE.Scale}
	L.moe = e
	var err error
	if e.router, err = m.rows(p+"ffn_gate_inp.weight", c.Dim, c.Experts, 0, c.Experts); err != nil {
		return err
	}
	if _, ok := m.file.Tensor(p + "exp_probs_b.bias"); ok {
		if e.bias, err = m.vector(p+"exp_probs_b.bias", c.Experts, 0, c.Experts); err != nil {
			return err
		}
	}
	for x := s.E0; x < s.E1; x++ {
		g, err := m.expert(p+"ffn_gate_exps.weight", c.Dim, c.ExpertFFN, c.Experts, x)
		if err != nil {
			return err
		}
		u, err := m.expert(p+"ffn_up_exps.weight", c.Dim, c.ExpertFFN, c.Experts, x)
		if err != nil {
			return err
		}
		d, err := m.expert(p+"ffn_down_exps.weight", c.ExpertFFN, c.Dim, c.Experts, x)
		if err != nil {
			return err
		}
		e.gate, e.up, e.down = append(e.gate, g), append(e.up, u), append(e.down, d)
	}
	if L.block.MoE.SharedGate {
		if e.shGate, err = m.vector(p+"ffn_gate_inp_shexp.weight", c.Dim, 0, c.Dim); err != nil {
			return err
		}
	} else if !L.block.MoE.Shared {
		return nil
	}
	if L.gate, err = m.rows(p+"ffn_gate_shexp.weight", c.Dim, c.SharedFFN, s.S0, s.S1); err != nil {
		return err
	}
	if L.up, err = m.rows(p+"ffn_up_shexp.weight", c.Dim, c.SharedFFN, s.S0, s.S1); err != nil {
		return err
	}
	L.down, err = m.cols(p+"ffn_down_shexp.weight", c.SharedFFN, c.Dim, s.S0, s.S1)
	return err
}

// route picks the experts of t normed tokens (scratch.xn): the router's logits, their softmax
// (or sigmoid), the ExpertsUsed best scores of each token (plus the score bias, if any, for
// the choice only; scratch.sel, best first) with their scores as weights (scratch.selW),
// renormalised to sum to 1 and scaled if the block says so.
func (m *Model) route(e *moeLayer, t int) error {
	c, s := &m.Cfg, &m.scratch
	n, k := c.Experts, c.ExpertsUsed
	logits := s.route[:t*n]
	if err := m.load(e.router, s.xn, t, c.Dim, 0); err != nil {
		return err
	}
	m.mul(e.router, t, logits)
	for i := 0; i < t; i++ {
		p := logits[i*n : (i+1)*n]
		if e.sigmoid {
			for j, v := range p {
				p[j] = 1 / (1 + float32(math.Exp(float64(-v))))
			}
		} else {
			mx := float32(math.Inf(-1))
			for _, v := range p {
				mx = max(mx, v)
			}
			var sum float64
			for j, v := range p {
				x := float32(math.Exp(float64(v - mx)))
				p[j] = x
				sum += float64(x)
			}
			inv := float32(1 / sum)
			for j := range p {
				p[j] *= inv
			}
		}
		choice := p
		if e.bias != nil {
			choice = s.choice[:n]
			for j, v := range p {
				choice[j] = v + e.bias[j]
			}
		}
		sel, w := s.sel[i*k:(i+1)*k], s.selW[i*k:(i+1)*k]
		// Selection of the k largest (the lowest id first among equals), best first.
		for j := range sel {
			best := -1
			for x, v := range choice {
				if (best < 0 || v > choice[best]) && !chosen(sel[:j], x) {
					best = x
				}
			}
			sel[j], w[j] = int32(best), p[best]
		}
		if e.normTopK {
			var ws float32
			for _, v := range w {
				ws += v
			}
			for j := range w {
				w[j] /= ws
			}
		}
		if e.scale != 0 {
			for j := range w {
				w[j] *= e.scale
			}
		}
		for _, x := range sel {
			m.expertTokens[x]++
		}
	}
	return nil
}

func chosen(sel []int32, x int) bool {
	for _, v := range sel {
		if int(v) == x {
			return true
		}
	}
	return false
}

// moeFFN computes this rank's part of a mixture-of-experts block for the t normed tokens in
// scratch.xn into scratch.proj: its routed experts over the tokens routed to them, each
// output scaled by the token's weight for that expert, plus its slice of the shared expert.
func (m *Model) moeFFN(L *layer, t int) error {
	c, sh, s := &m.Cfg, &m.Shard, &m.scratch
	e, dim, k := L.moe, c.Dim, c.ExpertsUsed
	out := s.proj[:t*dim]
	clear(out)
	if err := m.route(e, t); err != nil {
		return err
	}
	// Tokens grouped by local expert: a gather of their inputs, one batched product per
	// weight, a weighted scatter-add of the outputs.
	for x := sh.E0; x < sh.E1; x++ {
		s.etok, s.ew = s.etok[:0], s.ew[:0]
		for i := 0; i < t; i++ {
			for j := 0; j < k; j++ {
				if int(s.sel[i*k+j]) == x {
					s.etok = append(s.etok, i)
					s.ew = append(s.ew, s.selW[i*k+j])
				}
			}
		}
		n := len(s.etok)
		if n == 0 {
			continue
		}
		for r, i := range s.etok {
			copy(s.gx[r*dim:(r+1)*dim], s.xn[i*dim:(i+1)*dim])
		}
		l := x - sh.E0
		if err := m.mlp(e.gate[l], e.up[l], e.down[l], s.gx, n, s.ey); err != nil {
			return err
		}
		for r, i := range s.etok {
			w, y, o := s.ew[r], s.ey[r*dim:(r+1)*dim], out[i*dim:(i+1)*dim]
			for j := range o {
				o[j] += w * y[j]
			}
		}
	}
	if L.gate == nil {
		return nil
	}
	if err := m.mlp(L.gate, L.up, L.down, s.xn, t, s.ey); err != nil {
		return err
	}
	for i := 0; i < t; i++ {
		g := float32(1)
		if e.shGate != nil {
			xn := s.xn[i*dim : (i+1)*dim]
			var d float32
			for j, v := range e.shGate {
				d += v * xn[j]
			}
			g = 1 / (1 + float32(math.Exp(float64(-d))))
		}
		y, o := s.ey[i*dim:(i+1)*dim], out[i*dim:(i+1)*dim]
		for j := range o {
			o[j] += g * y[j]
		}
	}
	return nil
}

// ExpertTokens returns how many token-expert assignments each routed expert has received since
// the model was loaded (summed over layers; the same on every rank, as routing is replicated).
func (m *Model) ExpertTokens() []int64 { return m.expertTokens }
