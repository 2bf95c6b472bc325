package model

import (
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/quant"
)

type scratch struct {
	t                                  int
	x, xn, q, k, v, att, attFull, proj []float32
	gate, up                           []float32
	cos, sin                           []float32 // [t][RopeDim/2]
	vecs                               []quant.Vec
	ys                                 [][]float32
	scores                             []float32 // [local heads][ctx]
	vtype                              int       // vector type the vecs hold (-1: none)
	last                               []float32
	row                                []byte // one embedding row as stored
	pair                               [2]float32
	pairs                              []float32
	counts                             []int
	// latent attention
	qa, kva []float32
	mla     mlaScratch
	// mixture of experts
	route, selW, ew, gx, ey, choice []float32
	sel                             []int32
	etok                            []int
}

func (m *Model) grow(t int) {
	s := &m.scratch
	if s.t >= t {
		return
	}
	c, sh := &m.Cfg, &m.Shard
	hd := c.HeadDim
	nq, nkv := (sh.H1-sh.H0)*hd, (sh.KV1-sh.KV0)*hd
	nf := max(sh.F1-sh.F0, sh.S1-sh.S0)
	if c.Experts > 0 {
		nf = max(nf, c.ExpertFFN)
		s.route = make([]float32, t*c.Experts)
		s.choice = make([]float32, c.Experts)
		s.sel = make([]int32, t*c.ExpertsUsed)
		s.selW = make([]float32, t*c.ExpertsUsed)
		s.gx = make([]float32, t*c.Dim)
		s.ey = make([]float32, t*c.Dim)
	}
	s.t = t
	s.x = make([]float32, t*c.Dim)
	s.xn = make([]float32, t*c.Dim)
	s.proj = make([]float32, t*c.Dim)
	s.q = make([]float32, t*nq)
	s.att = make([]float32, t*(sh.H1-sh.H0)*c.VHeadDim)
	s.k = make([]float32, t*nkv)
	s.v = make([]float32, t*nkv)
	if sh.OGather {
		s.attFull = make([]float32, t*c.Heads*c.VHeadDim)
	}
	if c.KVLoraRank > 0 {
		m.growMLA(t)
	}
	s.gate = make([]float32, t*nf)
	s.up = make([]float32, t*nf)
	s.cos = make([]float32, t*c.RopeDim/2)
	s.sin = make([]float32, t*c.RopeDim/2)
	s.vecs = make([]quant.Vec, t)
	s.ys = make([][]float32, t)
	s.scores = make([]float32, (sh.H1-sh.H0)*m.ctx)
	s.last = make([]float32, c.Dim)
}

// load prepares the t input vectors in[i*stride+off : +cols] for rows of w's type.
func (m *Model) load(w *quant.Matrix, in []float32, t, stride, off int) error {
	s := &m.scratch
	for i := 0; i < t; i++ {
		if err := s.vecs[i].Load(w.Type, in[i*stride+off:i*stride+off+w.Cols]); err != nil {
			return err
		}
	}
	s.vtype = int(quant.VecType(w.Type))
	return nil
}

// mul computes out[i*w.Rows + r] = w row r · loaded vector i.
func (m *Model) mul(w *quant.Matrix, t int, out []float32) {
	s := &m.scratch
	if t == 1 {
		quant.MatVec(m.pool, w, &s.vecs[0], out[:w.Rows])
		return
	}
	for i := 0; i < t; i++ {
		s.ys[i] = out[i*w.Rows : (i+1)*w.Rows]
	}
	quant.MatMul(m.pool, w, s.vecs[:t], s.ys[:t])
}

// project multiplies each matrix of ws by the same inputs, converting them only once per
// vector type.
func (m *Model) project(in []float32, t, stride, off int, ws []*quant.Matrix, outs [][]float32) error {
	m.scratch.vtype = -1
	for i, w := range ws {
		if m.scratch.vtype != int(quant.VecType(w.Type)) {
			if err := m.load(w, in, t, stride, off); err != nil {
				return err
			}
		}
		m.mul(w, t, outs[i])
	}
	return nil
}

// rmsnorm is x times w over the root mean square of x, rounded as ggml's rms_norm and mul
// round it (squares in float32 summed in float64, the mean and 1/sqrt(mean+eps) in float32, x
// times that scale, then times w): the normed values feed products whose inputs are rounded
// to 8-bit blocks, where a one-ulp difference can take an exact rounding tie the other way.
func rmsnorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// rope rotates the pairs of v (halves for NeoX, adjacent pairs otherwise) by the angles of
// cos and sin. Each result is rounded once from x0*cos exact and the rounded second product,
// as ggml's rope compiles (a fused multiply-add): llama.cpp's queries and keys are then the
// same floats, which matters because they are rounded to F16 for the scores.
func (m *Model) rope(v []float32, cos, sin []float32) {
	n := len(cos)
	if m.Cfg.RopeStyle == RopeNeox {
		for i := 0; i < n; i++ {
			x0, x1 := v[i], v[i+n]
			v[i] = rot(x0, cos[i], -float32(x1*sin[i]))
			v[i+n] = rot(x0, sin[i], float32(x1*cos[i]))
		}
		return
	}
	for i := 0; i < n; i++ {
		x0, x1 := v[2*i], v[2*i+1]
		v[2*i] = rot(x0, cos[i], -float32(x1*sin[i]))
		v[2*i+1] = rot(x0, sin[i], float32(x1*cos[i]))
	}
}

// rot returns a*b+c rounded once to float32 (a*b is exact in float64; the sum's float64
// rounding before float32 changes the result only at exact float32 midpoints).
func rot(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
}

// Forward runs the tokens through the model at positions Pos().. and leaves the logits of the
// last one ready for Argmax, Logits or Sample: ForwardBatch of one sequence in the model's own
// one-slot cache. Every rank of the group calls it with the same tokens.
func (m *Model) Forward(tokens []int32) error {
	if len(tokens) == 0 {
		return fmt.Errorf("model: Forward of no tokens")
	}
	if m.pos+len(tokens) > m.ctx {
		return fmt.Errorf("model: %d tokens at position %d overflow the context of %d", len(tokens), m.pos, m.ctx)
	}
	m.seq[0] = Seq{Slot: 0, Pos: m.pos, Tokens: tokens, Logits: true}
	if err := m.ForwardBatch(m.single, m.seq[:]); err != nil {
		return err
	}
	m.pos += len(tokens)
	m.logits = m.single.scr.logits[:m.Shard.V1-m.Shard.V0]
	return nil
}

// attend computes one head's attention output for one query over cache positions [0,n).
func attend(out, q, kc, vc []float32, stride, off, n int, sc []float32, scale float32) {
	hd := len(q)
	mx := float32(math.Inf(-1))
	for p := 0; p < n; p++ {
		kv := kc[p*stride+off : p*stride+off+hd]
		var d float32
		for j, x := range q {
			d += x * kv[j]
		}
		d *= scale
		sc[p] = d
		mx = max(mx, d)
	}
	var sum float64
	for p := 0; p < n; p++ {
		e := math.Exp(float64(sc[p] - mx))
		sc[p] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	clear(out)
	for p := 0; p < n; p++ {
		w := sc[p] * inv
		vv := vc[p*stride+off : p*stride+off+hd]
		for j := range out {
			out[j] += w * vv[j]
		}
	}
}

// attendHalf is attend over an F16 cache with llama.cpp's roundings: the query is rounded to
// F16 for its products with the keys, and the attention weights are rounded to F16 for their
// product with the values (ggml converts the F32 operand of an F16 matrix product to F16).
func attendHalf(out, q []float32, kc, vc []uint16, stride, off, n int, sc []float32, scale float32) {
	hd := len(q)
	var qbuf [256]uint16
	qh := qbuf[:]
	if hd > len(qbuf) {
		qh = make([]uint16, hd)
	}
	qh = qh[:hd]
	quant.F32ToF16s(qh, q)
	mx := quant.DotF16Rows(sc[:n], qh, kc, stride, off, scale)
	var sum float64
	for p := 0; p < n; p++ {
		e := math.Exp(float64(sc[p] - mx))
		sc[p] = float32(e)
		sum += e
	}
	quant.ScaleRoundF16s(sc[:n], float32(1/sum))
	clear(out)
	quant.AxpyF16Rows(out, sc[:n], vc, stride, off)
}

func toHalf(dst []uint16, src []float32) { quant.F32ToF16s(dst, src) }

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// gatherHeads assembles every rank's attention outputs into attFull ([t][Heads*HeadDim]).
func (m *Model) gatherHeads(t int) error {
	c, sh, s := &m.Cfg, &m.Shard, &m.scratch
	p := sh.Size
	hd := c.VHeadDim
	counts := make([]int, p)
	for r := 0; r < p; r++ {
		counts[r] = t * (c.Heads*(r+1)/p - c.Heads*r/p) * hd
	}
	recv := make([]float32, t*c.Heads*hd)
	if err := m.group.Allgatherv(s.att[:counts[sh.Rank]], recv, counts); err != nil {
		return err
	}
	// recv holds rank blocks of [t][heads_r*hd]; interleave them by token.
	off := 0
	for r := 0; r < p; r++ {
		h0 := c.Heads * r / p
		w := (c.Heads*(r+1)/p - h0) * hd
		for i := 0; i < t; i++ {
			copy(s.attFull[i*c.Heads*hd+h0*hd:i*c.Heads*hd+h0*hd+w], recv[off+i*w:off+(i+1)*w])
		}
		off += t * w
	}
	return nil
}

// LocalLogits returns this rank's logits of the last token (vocabulary rows [V0,V1)).
func (m *Model) LocalLogits() []float32 { return m.logits }

// Logits gathers the full vocabulary's logits of the last token on every rank.
func (m *Model) Logits() ([]float32, error) {
	p := m.Shard.Size
	counts := make([]int, p)
	for r := range counts {
		counts[r] = m.Cfg.Vocab*(r+1)/p - m.Cfg.Vocab*r/p
	}
	out := make([]float32, m.Cfg.Vocab)
	if err := m.group.Allgatherv(m.logits, out, counts); err != nil {
		return nil, fmt.Errorf("gather logits: %w", err)
	}
	return out, nil
}

// Argmax returns the token with the largest logit (the lowest id among equals), agreed by every
// rank: each finds its local maximum and the ranks exchange one (value, id) pair each.
func (m *Model) Argmax() (int32, error) {
	best, bi := float32(math.Inf(-1)), 0
	for i, v := range m.logits {
		if v > best {
			best, bi = v, i
		}
	}
	p := m.Shard.Size
	s := &m.scratch
	if len(s.pairs) != 2*p {
		s.pairs = make([]float32, 2*p)
		s.counts = make([]int, p)
		for i := range s.counts {
			s.counts[i] = 2
		}
	}
	// The id travels as a float32, exact for vocabularies below 2^24 (checked at load).
	s.pair = [2]float32{best, float32(m.Shard.V0 + bi)}
	if len(m.logits) == 0 {
		s.pair[1] = -1
	}
	if err := m.group.Allgatherv(s.pair[:], s.pairs, s.counts); err != nil {
		return 0, fmt.Errorf("argmax: %w", err)
	}
	best, id := float32(math.Inf(-1)), float32(-1)
	for r := 0; r < p; r++ {
		v, i := s.pairs[2*r], s.pairs[2*r+1]
		if i >= 0 && (id < 0 || v > best) {
			best, id = v, i
		}
	}
	return int32(id), nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
