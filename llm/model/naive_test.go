package model_test

import (
	"fmt"
	"math"
	"sort"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// naive is a float64 forward pass written from the architectures' published equations,
// independent of the model package's kernels: every weight dequantized to float64, a float64
// KV cache, no activation rounding, loops only.
type naive struct {
	f   *gguf.File
	cfg *model.Config
	k   [][][]float64 // [layer][pos] keys (KVHeads*HeadDim)
	v   [][][]float64
	ws  map[string][]float64
	// routeMargin is the smallest, over the layers of the last step, of the amount by which
	// the last chosen expert's score exceeds the best unchosen one (+Inf without experts);
	// layerMargins holds that amount for each layer (+Inf for a layer without experts).
	routeMargin  float64
	layerMargins []float64
	// swap, when >= 0, is a layer whose router takes the best unchosen expert in place of the
	// last chosen one (what a flipped near-tie does).
	swap int
}

func newNaive(f *gguf.File) (*naive, error) {
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	return &naive{f: f, cfg: cfg, k: make([][][]float64, cfg.Layers), v: make([][][]float64, cfg.Layers), ws: map[string][]float64{}, swap: -1}, nil
}

// w returns tensor name dequantized, as rows of its first dimension.
func (n *naive) w(name string) ([]float64, error) {
	if w, ok := n.ws[name]; ok {
		return w, nil
	}
	t, ok := n.f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("tensor %s missing", name)
	}
	out := make([]float32, t.Elements())
	if err := quant.Dequantize(t.Type, n.f.TensorData(t), out); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := make([]float64, len(out))
	for i, v := range out {
		d[i] = float64(v)
	}
	n.ws[name] = d
	return d, nil
}

// matvec returns W·x for W of rows rows of len(x) (offset off rows into w).
func matvec(w []float64, rows int, x []float64) []float64 {
	c := len(x)
	y := make([]float64, rows)
	for r := range y {
		var s float64
		for j, xv := range x {
			s += w[r*c+j] * xv
		}
		y[r] = s
	}
	return y
}

func rmsnorm64(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	sc := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * sc * w[i]
	}
	return y
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

func (n *naive) rope(v []float64, pos int) {
	c := n.cfg
	half := c.RopeDim / 2
	for i := 0; i < half; i++ {
		fr := math.Pow(c.RopeBase, -float64(2*i)/float64(c.RopeDim))
		th := float64(pos) / c.RopeScale * fr
		if c.Yarn {
			// YaRN: the trained angle below YarnLow, the interpolated one above YarnHigh, a
			// linear ramp between.
			ramp := 1 - min(1, max(0, (float64(i)-c.YarnLow)/max(0.001, c.YarnHigh-c.YarnLow)))
			th = th*(1-ramp) + float64(pos)*fr*ramp
		}
		cs, sn := math.Cos(th), math.Sin(th)
		a, b := 2*i, 2*i+1
		if c.RopeStyle == model.RopeNeox {
			a, b = i, i+half
		}
		x0, x1 := v[a], v[b]
		v[a], v[b] = x0*cs-x1*sn, x0*sn+x1*cs
	}
}

// swiglu computes down·(silu(gate·x) * (up·x)) for matrices of hidden size h starting at
// expert e of the stacked tensors (e = 0 for plain matrices).
func swiglu(gate, up, down []float64, h, e int, x []float64) []float64 {
	d := len(x)
	g := matvec(gate[e*h*d:(e+1)*h*d], h, x)
	u := matvec(up[e*h*d:(e+1)*h*d], h, x)
	for i := range g {
		g[i] = silu(g[i]) * u[i]
	}
	return matvec(down[e*d*h:(e+1)*d*h], d, g)
}

// weights returns the weights of the named tensors, in order.
func (n *naive) weights(names ...string) ([][]float64, error) {
	var out [][]float64
	for _, nm := range names {
		w, err := n.w(nm)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// stepSwapped returns the logits of step(tok, pos), which must be the last step run, with
// layer l's router flipped (see swap), leaving the caches and margins as that step left them.
func (n *naive) stepSwapped(tok int32, pos, l int) ([]float64, error) {
	k, v := make([][]float64, len(n.k)), make([][]float64, len(n.v))
	for i := range n.k {
		k[i], v[i] = n.k[i][pos], n.v[i][pos]
		n.k[i], n.v[i] = n.k[i][:pos:pos], n.v[i][:pos:pos]
	}
	rm, lm := n.routeMargin, n.layerMargins
	n.swap = l
	out, err := n.step(tok, pos)
	n.swap = -1
	for i := range n.k {
		n.k[i], n.v[i] = append(n.k[i][:pos:pos], k[i]), append(n.v[i][:pos:pos], v[i])
	}
	n.routeMargin, n.layerMargins = rm, lm
	return out, err
}

// step runs one token at position pos and returns its logits.
func (n *naive) step(tok int32, pos int) ([]float64, error) {
	c := n.cfg
	emb, err := n.w("token_embd.weight")
	if err != nil {
		return nil, err
	}
	d, hd, eps := c.Dim, c.HeadDim, float64(c.Eps)
	if tok < 0 || int(tok) >= c.Vocab {
		return nil, fmt.Errorf("token %d", tok)
	}
	x := append([]float64(nil), emb[int(tok)*d:(int(tok)+1)*d]...)
	n.routeMargin = math.Inf(1)
	n.layerMargins = make([]float64, c.Layers)
	for l := range n.layerMargins {
		n.layerMargins[l] = math.Inf(1)
	}
	for l := 0; l < c.Layers; l++ {
		b := c.Block(l)
		p := fmt.Sprintf("blk.%d.", l)
		if b.MLA {
			if err := n.mla(l, pos, x); err != nil {
				return nil, err
			}
			xn, err := n.ffn(l, b, x)
			if err != nil {
				return nil, err
			}
			for i := range x {
				x[i] += xn[i]
			}
			continue
		}
		ws, err := n.weights(p+"attn_norm.weight", p+"attn_q.weight", p+"attn_k.weight", p+"attn_v.weight", p+"attn_output.weight", p+"ffn_norm.weight")
		if err != nil {
			return nil, err
		}
		xn := rmsnorm64(x, ws[0], eps)
		q, k, v := matvec(ws[1], c.Heads*hd, xn), matvec(ws[2], c.KVHeads*hd, xn), matvec(ws[3], c.KVHeads*hd, xn)
		if b.AttnBias {
			bs, err := n.weights(p+"attn_q.bias", p+"attn_k.bias", p+"attn_v.bias")
			if err != nil {
				return nil, err
			}
			for i, vec := range [][]float64{q, k, v} {
				for j := range vec {
					vec[j] += bs[i][j]
				}
			}
		}
		for _, qk := range []struct {
			v    []float64
			norm string
		}{{q, "attn_q_norm.weight"}, {k, "attn_k_norm.weight"}} {
			var nw []float64
			if b.QKNorm {
				if nw, err = n.w(p + qk.norm); err != nil {
					return nil, err
				}
			}
			for h := 0; h < len(qk.v)/hd; h++ {
				head := qk.v[h*hd : (h+1)*hd]
				if nw != nil {
					copy(head, rmsnorm64(head, nw, eps))
				}
				n.rope(head, pos)
			}
		}
		n.k[l], n.v[l] = append(n.k[l], k), append(n.v[l], v)
		att := make([]float64, c.Heads*hd)
		for h := 0; h < c.Heads; h++ {
			kh := h / (c.Heads / c.KVHeads)
			qh := q[h*hd : (h+1)*hd]
			sc := make([]float64, pos+1)
			mx := math.Inf(-1)
			for t := 0; t <= pos; t++ {
				var s float64
				for j, qv := range qh {
					s += qv * n.k[l][t][kh*hd+j]
				}
				sc[t] = s / math.Sqrt(float64(hd))
				mx = math.Max(mx, sc[t])
			}
			var sum float64
			for t := range sc {
				sc[t] = math.Exp(sc[t] - mx)
				sum += sc[t]
			}
			for t := range sc {
				for j := 0; j < hd; j++ {
					att[h*hd+j] += sc[t] / sum * n.v[l][t][kh*hd+j]
				}
			}
		}
		o := matvec(ws[4], d, att)
		for i := range x {
			x[i] += o[i]
		}
		ff, err := n.ffn(l, b, x)
		if err != nil {
			return nil, err
		}
		for i := range x {
			x[i] += ff[i]
		}
	}
	ws, err := n.weights("output_norm.weight", "output.weight")
	if err != nil {
		return nil, err
	}
	return matvec(ws[1], c.Vocab, rmsnorm64(x, ws[0], eps)), nil
}

// ffn returns layer l's feed-forward output for the residual x: its dense MLP or its mixture of
// experts (softmax or sigmoid scores, the score bias for the choice only, the chosen scores
// renormalised and scaled as the block says), plus the shared expert, gated or not.
func (n *naive) ffn(l int, b model.Block, x []float64) ([]float64, error) {
	c := n.cfg
	d, eps := c.Dim, float64(c.Eps)
	p := fmt.Sprintf("blk.%d.", l)
	nw, err := n.w(p + "ffn_norm.weight")
	if err != nil {
		return nil, err
	}
	xn := rmsnorm64(x, nw, eps)
	if b.MoE == nil {
		m, err := n.weights(p+"ffn_gate.weight", p+"ffn_up.weight", p+"ffn_down.weight")
		if err != nil {
			return nil, err
		}
		return swiglu(m[0], m[1], m[2], c.FFN, 0, xn), nil
	}
	m, err := n.weights(p+"ffn_gate_inp.weight", p+"ffn_gate_exps.weight", p+"ffn_up_exps.weight", p+"ffn_down_exps.weight")
	if err != nil {
		return nil, err
	}
	logit := matvec(m[0], c.Experts, xn)
	prob := make([]float64, len(logit))
	if b.MoE.Sigmoid {
		for i, v := range logit {
			prob[i] = 1 / (1 + math.Exp(-v))
		}
	} else {
		mx := math.Inf(-1)
		for _, v := range logit {
			mx = math.Max(mx, v)
		}
		var sum float64
		for i, v := range logit {
			prob[i] = math.Exp(v - mx)
			sum += prob[i]
		}
		for i := range prob {
			prob[i] /= sum
		}
	}
	choice := append([]float64(nil), prob...)
	if _, ok := n.f.Tensor(p + "exp_probs_b.bias"); ok {
		bias, err := n.w(p + "exp_probs_b.bias")
		if err != nil {
			return nil, err
		}
		for i := range choice {
			choice[i] += bias[i]
		}
	}
	idx := make([]int, len(prob))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return choice[idx[a]] > choice[idx[b]] })
	k := c.ExpertsUsed
	if k < len(idx) {
		n.layerMargins[l] = choice[idx[k-1]] - choice[idx[k]]
		n.routeMargin = min(n.routeMargin, n.layerMargins[l])
		if n.swap == l {
			idx[k-1], idx[k] = idx[k], idx[k-1]
		}
	}
	top := idx[:k]
	var wsum float64
	for _, e := range top {
		wsum += prob[e]
	}
	ff := make([]float64, d)
	for _, e := range top {
		w := prob[e]
		if b.MoE.NormTopK {
			w /= wsum
		}
		if b.MoE.Scale != 0 {
			w *= float64(b.MoE.Scale)
		}
		y := swiglu(m[1], m[2], m[3], c.ExpertFFN, e, xn)
		for i := range ff {
			ff[i] += w * y[i]
		}
	}
	if !b.MoE.SharedGate && !b.MoE.Shared {
		return ff, nil
	}
	s, err := n.weights(p+"ffn_gate_shexp.weight", p+"ffn_up_shexp.weight", p+"ffn_down_shexp.weight")
	if err != nil {
		return nil, err
	}
	g := 1.0
	if b.MoE.SharedGate {
		gw, err := n.w(p + "ffn_gate_inp_shexp.weight")
		if err != nil {
			return nil, err
		}
		var gd float64
		for i, v := range xn {
			gd += gw[i] * v
		}
		g = 1 / (1 + math.Exp(-gd))
	}
	y := swiglu(s[0], s[1], s[2], c.SharedFFN, 0, xn)
	for i := range ff {
		ff[i] += g * y[i]
	}
	return ff, nil
}

// mla adds layer l's multi-head latent attention (deepseek2) for the token at pos to the
// residual x, with full per-head keys and values up-projected from the latent in float64:
// q from attn_q (or attn_q_a, its norm and attn_q_b); the latent, RMS-normed, and the shared
// rotary key from attn_kv_a_mqa; head h's key [attn_kv_b's key rows times the latent, the
// rotary key] and value (attn_kv_b's value rows times the latent); scores scaled by AttnScale.
func (n *naive) mla(l, pos int, x []float64) error {
	c := n.cfg
	d, hd, vd, rd, kvl, eps := c.Dim, c.HeadDim, c.VHeadDim, c.RopeDim, c.KVLoraRank, float64(c.Eps)
	nope := hd - rd
	p := fmt.Sprintf("blk.%d.", l)
	var err error
	w := func(name string) []float64 {
		v, e := n.w(p + name)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	xn := rmsnorm64(x, w("attn_norm.weight"), eps)
	var q []float64
	if c.QLoraRank > 0 {
		qa := rmsnorm64(matvec(w("attn_q_a.weight"), c.QLoraRank, xn), w("attn_q_a_norm.weight"), eps)
		q = matvec(w("attn_q_b.weight"), c.Heads*hd, qa)
	} else {
		q = matvec(w("attn_q.weight"), c.Heads*hd, xn)
	}
	kva := matvec(w("attn_kv_a_mqa.weight"), kvl+rd, xn)
	kvb, wo := w("attn_kv_b.weight"), w("attn_output.weight")
	if err != nil {
		return err
	}
	lat := rmsnorm64(kva[:kvl], w("attn_kv_a_norm.weight"), eps)
	kr := kva[kvl:]
	n.rope(kr, pos)
	k, v := make([]float64, c.Heads*hd), make([]float64, c.Heads*vd)
	for h := 0; h < c.Heads; h++ {
		base := h * (nope + vd) * kvl
		copy(k[h*hd:], matvec(kvb[base:base+nope*kvl], nope, lat))
		copy(k[h*hd+nope:(h+1)*hd], kr)
		copy(v[h*vd:], matvec(kvb[base+nope*kvl:base+(nope+vd)*kvl], vd, lat))
		n.rope(q[h*hd+nope:(h+1)*hd], pos)
	}
	n.k[l], n.v[l] = append(n.k[l], k), append(n.v[l], v)
	att := make([]float64, c.Heads*vd)
	for h := 0; h < c.Heads; h++ {
		sc := make([]float64, pos+1)
		mx := math.Inf(-1)
		for t := range sc {
			var s float64
			for j := 0; j < hd; j++ {
				s += q[h*hd+j] * n.k[l][t][h*hd+j]
			}
			sc[t] = s * c.AttnScale
			mx = math.Max(mx, sc[t])
		}
		var sum float64
		for t := range sc {
			sc[t] = math.Exp(sc[t] - mx)
			sum += sc[t]
		}
		for t := range sc {
			for j := 0; j < vd; j++ {
				att[h*vd+j] += sc[t] / sum * n.v[l][t][h*vd+j]
			}
		}
	}
	o := matvec(wo, d, att)
	for i := range x {
		x[i] += o[i]
	}
	return err
}
