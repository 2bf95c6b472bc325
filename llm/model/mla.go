package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/quant"
)

// mlaLayer is one rank's part of a multi-head latent attention block (deepseek2). Per token
// the cache holds only the latent: the RMS-normed KVLoraRank values of attn_kv_a_mqa's
// product plus the RopeDim values of its shared rotary key, for all heads together. A head's
// key is [W_kb·latent, rotary key] and its value W_vb·latent; attention is computed in the
// latent space: the query's non-rotary part is first multiplied by W_kb^T, and the weighted
// sum of latents by W_vb afterwards. Heads are split over the ranks as in grouped-query
// attention; every rank computes the (small) latent itself.
type mlaLayer struct {
	wqA     *quant.Matrix // attn_q_a (nil: attn_q directly, in layer.wq)
	qANorm  []float32
	wkvA    *quant.Matrix // attn_kv_a_mqa: KVLoraRank + RopeDim rows
	kvANorm []float32
	// attn_kv_b of the local heads, as F32 matrices: per head the key up-projection transposed
	// (KVLoraRank rows of nope), which takes a query into the latent space, and the value
	// up-projection (VHeadDim rows of KVLoraRank).
	kbT, vb []*quant.Matrix
}

// kvWidth is the number of cached values per token and layer on this rank.
func (m *Model) kvWidth() int {
	if m.Cfg.KVLoraRank > 0 {
		return m.Cfg.KVLoraRank + m.Cfg.RopeDim
	}
	return (m.Shard.KV1 - m.Shard.KV0) * m.Cfg.HeadDim
}

func (c *Config) mlaTensors(p string) [][]any {
	hd, nope := c.HeadDim, c.HeadDim-c.RopeDim
	var need [][]any
	if c.QLoraRank > 0 {
		need = append(need, []any{p + "attn_q_a.weight", c.Dim, c.QLoraRank}, []any{p + "attn_q_a_norm.weight", c.QLoraRank},
			[]any{p + "attn_q_b.weight", c.QLoraRank, c.Heads * hd})
	} else {
		need = append(need, []any{p + "attn_q.weight", c.Dim, c.Heads * hd})
	}
	return append(need, []any{p + "attn_kv_a_mqa.weight", c.Dim, c.KVLoraRank + c.RopeDim},
		[]any{p + "attn_kv_a_norm.weight", c.KVLoraRank},
		[]any{p + "attn_kv_b.weight", c.KVLoraRank, c.Heads * (nope + c.VHeadDim)},
		[]any{p + "attn_output.weight", c.Heads * c.VHeadDim, c.Dim})
}

func (m *Model) bindMLA(L *layer, p string) error {
	c, s := &m.Cfg, &m.Shard
	hd, nope, vd, kvl := c.HeadDim, c.HeadDim-c.RopeDim, c.VHeadDim, c.KVLoraRank
	a := &mlaLayer{}
	L.mla = a
	var err error
	if c.QLoraRank > 0 {
		if a.wqA, err = m.rows(p+"attn_q_a.weight", c.Dim, c.QLoraRank, 0, c.QLoraRank); err != nil {
			return err
		}
		if a.qANorm, err = m.vector(p+"attn_q_a_norm.weight", c.QLoraRank, 0, c.QLoraRank); err != nil {
			return err
		}
		if L.wq, err = m.rows(p+"attn_q_b.weight", c.QLoraRank, c.Heads*hd, s.H0*hd, s.H1*hd); err != nil {
			return err
		}
	} else if L.wq, err = m.rows(p+"attn_q.weight", c.Dim, c.Heads*hd, s.H0*hd, s.H1*hd); err != nil {
		return err
	}
	if a.wkvA, err = m.rows(p+"attn_kv_a_mqa.weight", c.Dim, kvl+c.RopeDim, 0, kvl+c.RopeDim); err != nil {
		return err
	}
	if a.kvANorm, err = m.vector(p+"attn_kv_a_norm.weight", kvl, 0, kvl); err != nil {
		return err
	}
	kvb, err := m.rows(p+"attn_kv_b.weight", kvl, c.Heads*(nope+vd), s.H0*(nope+vd), s.H1*(nope+vd))
	if err != nil {
		return err
	}
	w := make([]float32, kvb.Rows*kvl)
	if err := quant.Dequantize(kvb.Type, kvb.Data, w); err != nil {
		return fmt.Errorf("%s: %sattn_kv_b.weight: %w", m.file.Path, p, err)
	}
	nh := s.H1 - s.H0
	f32 := func(rows, cols int, at func(r, c int) float32) (*quant.Matrix, error) {
		b := make([]byte, 4*rows*cols)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				binary.LittleEndian.PutUint32(b[4*(r*cols+c):], math.Float32bits(at(r, c)))
			}
		}
		return quant.NewMatrix(gguf.F32, rows, cols, b)
	}
	for h := 0; h < nh; h++ {
		base := h * (nope + vd) * kvl
		kt, err := f32(kvl, nope, func(r, c int) float32 { return w[base+c*kvl+r] })
		if err != nil {
			return err
		}
		v, err := f32(vd, kvl, func(r, c int) float32 { return w[base+(nope+r)*kvl+c] })
		if err != nil {
			return err
		}
		a.kbT, a.vb = append(a.kbT, kt), append(a.vb, v)
	}
	return nil
}

func (m *Model) growMLA(t int) {
	c, s := &m.Cfg, &m.scratch
	nh := m.Shard.H1 - m.Shard.H0
	s.qa = make([]float32, t*max(c.QLoraRank, 1))
	s.kva = make([]float32, t*(c.KVLoraRank+c.RopeDim))
	s.qabs = make([]float32, nh*c.KVLoraRank)
	s.lctx = make([]float32, nh*c.KVLoraRank)
	s.lrow = make([]float32, nh*(c.KVLoraRank+c.RopeDim))
	s.hvecs = make([]quant.Vec, nh)
}

// attentionMLA is attention for a latent-attention layer (see mlaLayer).
func (m *Model) attentionMLA(li int, c *Cache, t int) error {
	cf, sh, s, b := &m.Cfg, &m.Shard, &m.scratch, &c.scr
	L := &m.layers[li]
	a := L.mla
	dim, hd, vd := cf.Dim, cf.HeadDim, cf.VHeadDim
	kvl, nope, half := cf.KVLoraRank, cf.HeadDim-cf.RopeDim, cf.RopeDim/2
	w := kvl + cf.RopeDim
	nh := sh.H1 - sh.H0
	nq := nh * hd
	for i := 0; i < t; i++ {
		rmsnorm(s.xn[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], L.attnNorm, cf.Eps)
	}
	if a.wqA != nil {
		r := cf.QLoraRank
		if err := m.project(s.xn, t, dim, 0, []*quant.Matrix{a.wqA}, [][]float32{s.qa}); err != nil {
			return err
		}
		for i := 0; i < t; i++ {
			rmsnorm(s.qa[i*r:(i+1)*r], s.qa[i*r:(i+1)*r], a.qANorm, cf.Eps)
		}
		if err := m.project(s.qa, t, r, 0, []*quant.Matrix{L.wq}, [][]float32{s.q}); err != nil {
			return err
		}
		if err := m.project(s.xn, t, dim, 0, []*quant.Matrix{a.wkvA}, [][]float32{s.kva}); err != nil {
			return err
		}
	} else if err := m.project(s.xn, t, dim, 0, []*quant.Matrix{L.wq, a.wkvA}, [][]float32{s.q, s.kva}); err != nil {
		return err
	}
	slotLen := c.ctx * w
	for i := 0; i < t; i++ {
		cs, sn := s.cos[i*half:(i+1)*half], s.sin[i*half:(i+1)*half]
		lat := s.kva[i*w : (i+1)*w]
		rmsnorm(lat[:kvl], lat[:kvl], a.kvANorm, cf.Eps)
		m.rope(lat[kvl:], cs, sn)
		c.k[li].store(b.slot[i]*c.ctx+b.pos[i], lat)
		for h := 0; h < nh; h++ {
			m.rope(s.q[i*nq+h*hd+nope:i*nq+(h+1)*hd], cs, sn)
		}
	}
	scale := float32(cf.AttnScale)
	one := &quant.Pool{Threads: 1} // the heads are the parallel loop
	m.pool.For(nh, func(h0, h1 int) {
		for h := h0; h < h1; h++ {
			qabs, lctx, row := s.qabs[h*kvl:(h+1)*kvl], s.lctx[h*kvl:(h+1)*kvl], s.lrow[h*w:(h+1)*w]
			vec := &s.hvecs[h]
			sc := s.scores[h*m.ctx : (h+1)*m.ctx]
			for i := 0; i < t; i++ {
				q := s.q[i*nq+h*hd : i*nq+(h+1)*hd]
				if err := vec.Load(gguf.F32, q[:nope]); err != nil {
					panic(err) // F32 loads do not fail
				}
				quant.MatVec(one, a.kbT[h], vec, qabs)
				n := b.pos[i] + 1
				base := b.slot[i] * slotLen
				kb := &c.k[li] // f16 or f32 (Load refuses the block types for latent caches)
				latent := func(p int) []float32 {
					if kb.t == kvF32 {
						return kb.f32[base+p*w : base+(p+1)*w]
					}
					for j, x := range kb.f16[base+p*w : base+(p+1)*w] {
						row[j] = quant.F16ToF32(x)
					}
					return row
				}
				mx := float32(math.Inf(-1))
				for p := 0; p < n; p++ {
					l := latent(p)
					var d float32
					for j, x := range qabs {
						d += x * l[j]
					}
					for j, x := range q[nope:] {
						d += x * l[kvl+j]
					}
					sc[p] = d * scale
					mx = max(mx, sc[p])
				}
				var sum float64
				for p := 0; p < n; p++ {
					e := math.Exp(float64(sc[p] - mx))
					sc[p] = float32(e)
					sum += e
				}
				inv := float32(1 / sum)
				clear(lctx)
				for p := 0; p < n; p++ {
					wp, l := sc[p]*inv, latent(p)
					for j := range lctx {
						lctx[j] += wp * l[j]
					}
				}
				if err := vec.Load(gguf.F32, lctx); err != nil {
					panic(err)
				}
				quant.MatVec(one, a.vb[h], vec, s.att[i*nh*vd+h*vd:i*nh*vd+(h+1)*vd])
			}
		}
	})
	return m.attnOut(li, t)
}
