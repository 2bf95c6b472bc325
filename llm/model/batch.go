package model

import (
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/quant"
)

// Cache holds the key/value caches of several independent sequences ("slots"), for serving
// many requests at once: one ForwardBatch advances any mix of them (prompt chunks of new
// requests and single decode tokens of running ones) with one matrix product per weight.
type Cache struct {
	slots, ctx int
	k, v       []kvBuf // per layer: [slot][ctx][local KV width]
	scr        batchScratch
}

// NewCache allocates slots sequences of ctx tokens each (at most the model's context, which
// sizes the scratch buffers), in the model's KV cache type.
func (m *Model) NewCache(slots, ctx int) (*Cache, error) {
	if slots < 1 || ctx < 1 || ctx > m.ctx {
		return nil, fmt.Errorf("model: cache of %d slots of %d tokens (want >= 1 slot, 1..%d tokens)", slots, ctx, m.ctx)
	}
	nkv := m.kvWidth()
	c := &Cache{slots: slots, ctx: ctx}
	for range m.layers {
		// Latent attention caches one latent row per token in k and no values.
		nv, split := nkv, 0
		if m.Cfg.KVLoraRank > 0 {
			nv, split = 0, m.Cfg.KVLoraRank
		}
		c.k = append(c.k, newKVBufSplit(m.kType, slots*ctx, nkv, split))
		c.v = append(c.v, newKVBuf(m.vType, slots*ctx, nv))
	}
	return c, nil
}

// Slots returns the number of sequences the cache holds.
func (c *Cache) Slots() int { return c.slots }

// Context returns the length of each slot in tokens.
func (c *Cache) Context() int { return c.ctx }

// Seq is one sequence's part of a batch: Tokens go to slot Slot at positions Pos, Pos+1, ...
// (its earlier positions must already be in the slot's cache).
type Seq struct {
	Slot   int
	Pos    int
	Tokens []int32
	Logits bool // compute the logits after its last token
}

// batchScratch holds ForwardBatch's per-token bookkeeping.
type batchScratch struct {
	slot, pos []int
	tokens    []int32
	last      []int // token index of each logits row
	hidden    []float32
	logits    []float32 // [rows][local vocab]
	ys        [][]float32
	pairs     []float32
	counts    []int
	gathered  []float32
}

// ForwardBatch runs the tokens of every sequence through the model in one pass: the
// projections are matrix-matrix products over all tokens of all sequences; attention is per
// token, over its own slot. It leaves one row of logits per sequence with Logits set, in
// order, for BatchArgmax and BatchLogits. Every rank of the group calls it with the same seqs.
func (m *Model) ForwardBatch(c *Cache, seqs []Seq) error {
	_, err := m.ForwardHidden(c, seqs, nil)
	return err
}

// ForwardHidden is ForwardBatch for a rank holding a pipeline stage's layers (Options.Layers):
// the first stage embeds the tokens (in is ignored), the others take the residual stream of
// every token from in (one row of Dim per token, in the order of seqs' tokens, whose values
// they do not read); the last stage leaves the logits as ForwardBatch does and returns nil,
// the others return the residual stream after their layers (valid until the next call).
func (m *Model) ForwardHidden(c *Cache, seqs []Seq, in []float32) ([]float32, error) {
	b := &c.scr
	b.slot, b.pos, b.last = b.slot[:0], b.pos[:0], b.last[:0]
	tokens := b.tokens[:0]
	for i, q := range seqs {
		if q.Slot < 0 || q.Slot >= c.slots {
			return nil, fmt.Errorf("model: sequence %d: slot %d outside [0,%d)", i, q.Slot, c.slots)
		}
		if len(q.Tokens) == 0 {
			return nil, fmt.Errorf("model: sequence %d (slot %d) has no tokens", i, q.Slot)
		}
		if q.Pos < 0 || q.Pos+len(q.Tokens) > c.ctx {
			return nil, fmt.Errorf("model: sequence %d (slot %d): %d tokens at position %d overflow the slot's context of %d", i, q.Slot, len(q.Tokens), q.Pos, c.ctx)
		}
		for j := range q.Tokens {
			b.slot = append(b.slot, q.Slot)
			b.pos = append(b.pos, q.Pos+j)
		}
		tokens = append(tokens, q.Tokens...)
		if q.Logits {
			b.last = append(b.last, len(tokens)-1)
		}
	}
	b.tokens = tokens
	t := len(tokens)
	if t == 0 {
		return nil, fmt.Errorf("model: ForwardBatch of no tokens")
	}
	if m.first() {
		in = nil
	} else if len(in) != t*m.Cfg.Dim {
		return nil, fmt.Errorf("model: layers %d..%d: %d hidden values for %d tokens of width %d", m.l0, m.l1-1, len(in), t, m.Cfg.Dim)
	}
	m.grow(t)
	return m.stages(c, t, in)
}

// stages runs the t tokens of c's bookkeeping through this rank's layers, from the embedding
// or, when in is not nil, from the residual stream in; the last stage then computes the
// logits rows, the others return the residual stream.
func (m *Model) stages(c *Cache, t int, in []float32) ([]float32, error) {
	cf, sh, s := &m.Cfg, &m.Shard, &m.scratch
	b := &c.scr
	if in != nil {
		copy(s.x[:t*cf.Dim], in)
	} else if err := m.embed(b.tokens); err != nil {
		return nil, err
	}
	m.ropeTables(t, func(i int) int { return b.pos[i] })
	for li := range m.layers {
		if err := m.attention(li, c, t); err != nil {
			return nil, err
		}
		if err := m.feedForward(li, t); err != nil {
			return nil, err
		}
	}
	if !m.last() {
		return s.x[:t*cf.Dim], nil
	}
	dim := cf.Dim
	rows := len(b.last)
	vl := sh.V1 - sh.V0
	b.hidden = grow(b.hidden, rows*dim)
	b.logits = grow(b.logits, rows*vl)
	for r, i := range b.last {
		rmsnorm(b.hidden[r*dim:(r+1)*dim], s.x[i*dim:(i+1)*dim], m.outNorm, cf.Eps)
	}
	if rows == 0 {
		return nil, nil
	}
	if err := m.load(m.out, b.hidden, rows, dim, 0); err != nil {
		return nil, err
	}
	m.mul(m.out, rows, b.logits)
	return nil, nil
}

// embed dequantizes the embedding rows of tokens into scratch.x.
func (m *Model) embed(tokens []int32) error {
	s, dim := &m.scratch, m.Cfg.Dim
	rb, _ := m.embd.Type.RowBytes(int64(dim))
	s.row = grow(s.row, int(rb))
	for i, tok := range tokens {
		if tok < 0 || int(tok) >= m.Cfg.Vocab {
			return fmt.Errorf("model: token id %d outside the vocabulary of %d", tok, m.Cfg.Vocab)
		}
		// pread, not the mapping: a fault would map the 64 KiB around the row too, and the
		// rows of a long prompt would add up to megabytes of another rank's pages.
		if err := m.file.ReadAt(m.embd, s.row, int64(tok)*rb); err != nil {
			return err
		}
		if err := quant.Dequantize(m.embd.Type, s.row, s.x[i*dim:(i+1)*dim]); err != nil {
			return err
		}
	}
	return nil
}

// ropeTables fills scratch.cos and scratch.sin for t tokens, token i at position pos(i).
func (m *Model) ropeTables(t int, pos func(i int) int) {
	s, half := &m.scratch, m.Cfg.RopeDim/2
	if !m.Cfg.Yarn {
		// The angles as ggml computes them, in float32: the position multiplied by
		// base^(-2/RopeDim) once per pair, divided by the pair's rope_freqs factor, times the
		// linear scale. They differ from the float64 angles by a few ulp, enough to change
		// the F16 rounding of some query and key elements.
		step := float32(math.Pow(float64(float32(m.Cfg.RopeBase)), float64(float32(-2/float64(m.Cfg.RopeDim)))))
		fs := float32(1 / m.Cfg.RopeScale)
		for i := 0; i < t; i++ {
			th := float32(pos(i))
			for j := 0; j < half; j++ {
				a := th
				if m.ropeFF != nil {
					a /= m.ropeFF[j]
				}
				a *= fs
				s.cos[i*half+j], s.sin[i*half+j] = float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
				th *= step
			}
		}
		return
	}
	for i := 0; i < t; i++ {
		p := float64(pos(i)) / m.Cfg.RopeScale
		for j := 0; j < half; j++ {
			th := p * m.freqs[j]
			if c := &m.Cfg; c.Yarn {
				// YaRN: the trained angle for the fast dimensions (ramp 1), the interpolated
				// one for the slow ones (ramp 0).
				ramp := 1 - min(1, max(0, (float64(j)-c.YarnLow)/max(0.001, c.YarnHigh-c.YarnLow)))
				ext := float64(pos(i)) * m.freqs[j]
				th = th*(1-ramp) + ext*ramp
			}
			sn, cs := math.Sincos(th)
			s.cos[i*half+j], s.sin[i*half+j] = float32(cs), float32(sn)
		}
	}
}

// qkv normalizes t tokens of the residual stream for attention and projects them to this
// rank's q, k and v.
func (m *Model) qkv(L *layer, t int) error {
	s, dim := &m.scratch, m.Cfg.Dim
	for i := 0; i < t; i++ {
		rmsnorm(s.xn[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], L.attnNorm, m.Cfg.Eps)
	}
	return m.project(s.xn, t, dim, 0, []*quant.Matrix{L.wq, L.wk, L.wv}, [][]float32{s.q, s.k, s.v})
}

// positionQK applies the biases, the QK norms and RoPE to one token's local q, k and v.
func (m *Model) positionQK(L *layer, q, k, v, cs, sn []float32) {
	c, hd := &m.Cfg, m.Cfg.HeadDim
	if L.bq != nil {
		addTo(q, L.bq)
		addTo(k, L.bk)
		addTo(v, L.bv)
	}
	for h := 0; h < len(q)/hd; h++ {
		qh := q[h*hd : (h+1)*hd]
		if L.qNorm != nil {
			rmsnorm(qh, qh, L.qNorm, c.Eps)
		}
		m.rope(qh, cs, sn)
	}
	for h := 0; h < len(k)/hd; h++ {
		kh := k[h*hd : (h+1)*hd]
		if L.kNorm != nil {
			rmsnorm(kh, kh, L.kNorm, c.Eps)
		}
		m.rope(kh, cs, sn)
	}
}

// attention runs layer li's attention for the t tokens of the batch in scratch.x (slots and
// positions in c's bookkeeping): the normed projections, biases, QK norms and RoPE, the cache
// store, attention per head over each token's slot, then the row-parallel output projection
// and its allreduce, added to the residual stream.
func (m *Model) attention(li int, c *Cache, t int) error {
	cf, sh, s, b := &m.Cfg, &m.Shard, &m.scratch, &c.scr
	L := &m.layers[li]
	if L.mla != nil {
		return m.attentionMLA(li, c, t)
	}
	hd := cf.HeadDim
	nh, nkvh := sh.H1-sh.H0, sh.KV1-sh.KV0
	nq, nkv := nh*hd, nkvh*hd
	half := cf.RopeDim / 2
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := cf.Heads / cf.KVHeads
	if err := m.qkv(L, t); err != nil {
		return err
	}
	for i := 0; i < t; i++ {
		k, v := s.k[i*nkv:(i+1)*nkv], s.v[i*nkv:(i+1)*nkv]
		m.positionQK(L, s.q[i*nq:(i+1)*nq], k, v, s.cos[i*half:(i+1)*half], s.sin[i*half:(i+1)*half])
		c.k[li].store(b.slot[i]*c.ctx+b.pos[i], k)
		c.v[li].store(b.slot[i]*c.ctx+b.pos[i], v)
	}
	m.pool.For(nh, func(h0, h1 int) {
		for h := h0; h < h1; h++ {
			kvl := (sh.H0+h)/group - sh.KV0
			sc := s.scores[h*m.ctx : (h+1)*m.ctx]
			for i := 0; i < t; i++ {
				out, q := s.att[i*nq+h*hd:i*nq+(h+1)*hd], s.q[i*nq+h*hd:i*nq+(h+1)*hd]
				k, v := c.k[li].rowsOf(b.slot[i]*c.ctx, c.ctx), c.v[li].rowsOf(b.slot[i]*c.ctx, c.ctx)
				attendKV(out, q, &k, &v, kvl*hd, b.pos[i]+1, sc, scale)
			}
		}
	})
	return m.attnOut(li, t)
}

// attnOut is the row-parallel output projection of the t tokens' attention outputs in
// scratch.att, one allreduce for the whole batch, added to the residual stream.
func (m *Model) attnOut(li, t int) error {
	cf, sh, s := &m.Cfg, &m.Shard, &m.scratch
	L := &m.layers[li]
	hd := cf.VHeadDim
	dim := cf.Dim
	in, stride, off := s.att, (sh.H1-sh.H0)*hd, 0
	if sh.OGather {
		if err := m.gatherHeads(t); err != nil {
			return fmt.Errorf("layer %d: gather attention: %w", m.l0+li, err)
		}
		in, stride, off = s.attFull, cf.Heads*hd, sh.O0
	}
	if err := m.load(L.wo, in, t, stride, off); err != nil {
		return err
	}
	m.mul(L.wo, t, s.proj)
	if err := m.group.AllreduceSum(s.proj[:t*dim]); err != nil {
		return fmt.Errorf("layer %d: attention allreduce: %w", m.l0+li, err)
	}
	addTo(s.x[:t*dim], s.proj[:t*dim])
	return nil
}

// feedForward runs layer li's feed-forward block (the dense MLP or the mixture of experts)
// for t tokens: the norm, this rank's part, one allreduce, added to the residual stream.
func (m *Model) feedForward(li, t int) error {
	c, s := &m.Cfg, &m.scratch
	L := &m.layers[li]
	dim := c.Dim
	for i := 0; i < t; i++ {
		rmsnorm(s.xn[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], L.ffnNorm, c.Eps)
	}
	if L.moe != nil {
		if err := m.moeFFN(L, t); err != nil {
			return err
		}
	} else if err := m.mlp(L.gate, L.up, L.down, s.xn, t, s.proj); err != nil {
		return err
	}
	if err := m.group.AllreduceSum(s.proj[:t*dim]); err != nil {
		return fmt.Errorf("layer %d: MLP allreduce: %w", m.l0+li, err)
	}
	addTo(s.x[:t*dim], s.proj[:t*dim])
	return nil
}

// mlp computes out = down · (silu(gate · in) * (up · in)) for t tokens in (rows of Dim), over
// the hidden units gate, up and down hold.
func (m *Model) mlp(gate, up, down *quant.Matrix, in []float32, t int, out []float32) error {
	s := &m.scratch
	dim, nf := m.Cfg.Dim, gate.Rows
	g, u := s.gate[:t*nf], s.up[:t*nf]
	if err := m.project(in, t, dim, 0, []*quant.Matrix{gate, up}, [][]float32{g, u}); err != nil {
		return err
	}
	u = u[:len(g)]
	for i, x := range g {
		g[i] = x / (1 + expf(-x)) * u[i]
	}
	if err := m.load(down, g, t, nf, 0); err != nil {
		return err
	}
	m.mul(down, t, out)
	return nil
}

// expf is e^x in float32 within 2 ulp of the rounded exact value (Cephes' expf: x = k ln 2 + r
// with |r| <= ln 2 / 2, a degree-7 polynomial for e^r, then 2^k in the exponent bits), at a
// fraction of math.Exp's cost. Outside [-87, 88] (where 2^k would leave the normal exponents),
// and for NaN, it is math.Exp's.
func expf(x float32) float32 {
	if !(x >= -87 && x <= 88) {
		return float32(math.Exp(float64(x)))
	}
	// k = round(x / ln 2): adding 1.5 * 2^23 leaves no fraction bits.
	const round = 0x1.8p23
	k := x*1.442695040888963 + round
	k -= round
	r := x - k*0.693359375 - k*-2.12194440e-4
	p := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// Rows returns the number of logits rows the last ForwardBatch on c left.
func (c *Cache) Rows() int { return len(c.scr.last) }

// LocalLogits returns this rank's part of the logits rows the last ForwardBatch on c left:
// Rows() rows of its vocabulary range [V0,V1), valid until the next pass on c.
func (c *Cache) LocalLogits() []float32 { return c.scr.logits }

// BatchArgmax returns the greedy token of every logits row of the last ForwardBatch on c, agreed by
// every rank with one exchange of (value, id) pairs for all rows.
func (m *Model) BatchArgmax(c *Cache) ([]int32, error) {
	b, sh := &c.scr, &m.Shard
	rows, vl, p := len(b.last), sh.V1-sh.V0, sh.Size
	if rows == 0 {
		return nil, nil
	}
	send := make([]float32, 2*rows)
	for r := 0; r < rows; r++ {
		best, bi := float32(math.Inf(-1)), -1
		for i, v := range b.logits[r*vl : (r+1)*vl] {
			if v > best || bi < 0 {
				best, bi = v, i
			}
		}
		send[2*r], send[2*r+1] = best, float32(sh.V0+bi)
		if bi < 0 {
			send[2*r+1] = -1
		}
	}
	b.pairs = grow(b.pairs, 2*rows*p)
	b.counts = grow(b.counts, p)
	for i := range b.counts {
		b.counts[i] = 2 * rows
	}
	if err := m.group.Allgatherv(send, b.pairs, b.counts); err != nil {
		return nil, fmt.Errorf("batch argmax: %w", err)
	}
	out := make([]int32, rows)
	for r := 0; r < rows; r++ {
		best, id := float32(math.Inf(-1)), float32(-1)
		for k := 0; k < p; k++ {
			v, i := b.pairs[k*2*rows+2*r], b.pairs[k*2*rows+2*r+1]
			if i >= 0 && (id < 0 || v > best) {
				best, id = v, i
			}
		}
		out[r] = int32(id)
	}
	return out, nil
}

// BatchLogits gathers the full-vocabulary logits of the given rows of the last ForwardBatch
// on every rank (one exchange for all of them).
func (m *Model) BatchLogits(c *Cache, rows []int) ([][]float32, error) {
	b, sh, cf := &c.scr, &m.Shard, &m.Cfg
	if len(rows) == 0 {
		return nil, nil
	}
	vl, p := sh.V1-sh.V0, sh.Size
	send := make([]float32, 0, len(rows)*vl)
	for _, r := range rows {
		if r < 0 || r >= len(b.last) {
			return nil, fmt.Errorf("model: logits row %d of %d", r, len(b.last))
		}
		send = append(send, b.logits[r*vl:(r+1)*vl]...)
	}
	b.counts = grow(b.counts, p)
	for k := range b.counts {
		b.counts[k] = len(rows) * (cf.Vocab*(k+1)/p - cf.Vocab*k/p)
	}
	b.gathered = grow(b.gathered, len(rows)*cf.Vocab)
	if err := m.group.Allgatherv(send, b.gathered, b.counts); err != nil {
		return nil, fmt.Errorf("batch logits: %w", err)
	}
	// gathered holds rank blocks of [rows][vocab part]; reassemble each row.
	out := make([][]float32, len(rows))
	for i := range out {
		out[i] = make([]float32, cf.Vocab)
	}
	off := 0
	for k := 0; k < p; k++ {
		v0, w := cf.Vocab*k/p, cf.Vocab*(k+1)/p-cf.Vocab*k/p
		for i := range rows {
			copy(out[i][v0:v0+w], b.gathered[off+i*w:off+(i+1)*w])
		}
		off += len(rows) * w
	}
	return out, nil
}
