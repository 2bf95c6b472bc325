package model

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

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
	// attn_kv_b of the local heads: per head the key up-projection transposed as an F32
	// matrix (KVLoraRank rows of nope), which takes a query into the latent space, and, as
	// the file stores them, the key up-projection (nope rows of KVLoraRank) and the value
	// up-projection (VHeadDim rows of KVLoraRank).
	kbT, kb, vb []*quant.Matrix
	// vbF32 (a q8_0 latent cache only): the value up-projections dequantized to F32. The
	// weighted latent sum is then projected unrounded, so that the head's output is, up to the
	// order of float sums, sum p * (W_vb . deq(q8(latent))): what llama.cpp c392e50 computes
	// from the values W_vb . q8(latent) it caches (for an attn_kv_b whose products take Q8_0
	// inputs). vb's own type would round the sum to that type's input blocks once more.
	vbF32 []*quant.Matrix
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
		r0 := h * (nope + vd) * kvb.RowBytes
		k := &quant.Matrix{Type: kvb.Type, Rows: nope, Cols: kvl, RowBytes: kvb.RowBytes, Data: kvb.Data[r0 : r0+nope*kvb.RowBytes]}
		r0 += nope * kvb.RowBytes
		v := &quant.Matrix{Type: kvb.Type, Rows: vd, Cols: kvl, RowBytes: kvb.RowBytes, Data: kvb.Data[r0 : r0+vd*kvb.RowBytes]}
		a.kbT, a.kb, a.vb = append(a.kbT, kt), append(a.kb, k), append(a.vb, v)
		if m.kType == kvQ8_0 {
			base += nope * kvl
			vf, err := f32(vd, kvl, func(r, c int) float32 { return w[base+r*kvl+c] })
			if err != nil {
				return err
			}
			a.vbF32 = append(a.vbF32, vf)
		}
	}
	return nil
}

func (m *Model) growMLA(t int) {
	c, s := &m.Cfg, &m.scratch
	s.qa = make([]float32, t*max(c.QLoraRank, 1))
	s.kva = make([]float32, t*(c.KVLoraRank+c.RopeDim))
}

// mlaChunk is the number of query tokens of one head that latent attention processes together:
// enough for each product to reuse its matrix from cache, few enough to bound the score rows.
const mlaChunk = 32

// mlaHead is the scratch of one worker of the head loop: one head's latent attention over up
// to mlaChunk tokens attending to n positions.
type mlaHead struct {
	qcat  []float32 // [token][KVLoraRank+RopeDim]: the absorbed query, then the rotary query
	w     []float32 // [token][n]: the scores (row stride: the chunk's n)
	wb    []byte    // the same rows' attention weights, as an F32 matrix
	lctxT []float32 // [KVLoraRank][token]: the weighted sums of latents, transposed
	lctx  []float32 // [token][KVLoraRank]
	qb    []byte    // [token][HeadDim]: the queries as an F32 matrix (keys up-projected)
	scT   []float32 // [position][token]: their scores
	vecs  []quant.Vec
	ys    [][]float32
}

// mlaScratch is latent attention's per-call state: the F32 copies of the slot's latents that all
// heads read (row-major for the scores, the latent part transposed for the weighted sums), sized
// to the positions attended to, and the head loop's per-worker scratch.
type mlaScratch struct {
	rows  []byte      // F32 matrix [n][KVLoraRank+RopeDim]
	flat  []float32   // the same, as floats
	colT  []float32   // [KVLoraRank][n]
	lvecs []quant.Vec // the latents loaded for attn_kv_b's type (keys up-projected)
	errs  []error     // per local head
	heads sync.Pool   // *mlaHead
	keys  sync.Pool   // *mlaKeys
}

// mlaKeys holds one head's keys [position][HeadDim] (the up-projected latent, then the rotary
// key) while the head is being computed.
type mlaKeys struct {
	k    []float32
	vecs []quant.Vec
	ys   [][]float32
}

// grow sizes the shared buffers for n positions.
func (a *mlaScratch) grow(c *Config, nh, n int) {
	kvl, w := c.KVLoraRank, c.KVLoraRank+c.RopeDim
	if len(a.rows) < 4*n*w {
		a.rows, a.colT = make([]byte, 4*n*w), make([]float32, n*kvl)
		a.flat, a.lvecs = make([]float32, n*w), make([]quant.Vec, n)
	}
	if len(a.errs) < nh {
		a.errs = make([]error, nh)
	}
}

// head returns a worker's scratch sized for n positions.
func (a *mlaScratch) head(c *Config, n int) *mlaHead {
	kvl, w := c.KVLoraRank, c.KVLoraRank+c.RopeDim
	hs, _ := a.heads.Get().(*mlaHead)
	if hs == nil {
		hs = &mlaHead{
			qcat:  make([]float32, mlaChunk*w),
			lctxT: make([]float32, kvl*mlaChunk),
			lctx:  make([]float32, mlaChunk*kvl),
			qb:    make([]byte, 4*mlaChunk*c.HeadDim),
			vecs:  make([]quant.Vec, max(mlaChunk, kvl)),
			ys:    make([][]float32, max(mlaChunk, kvl)),
		}
	}
	if len(hs.w) < mlaChunk*n {
		hs.w, hs.wb, hs.scT = make([]float32, mlaChunk*n), make([]byte, 4*mlaChunk*n), make([]float32, mlaChunk*n)
	}
	return hs
}

// latents writes the first n cached latent rows of one slot (r0: its first row) as F32 to
// a.rows and a.flat and, for an F32 or q8_0 cache, their KVLoraRank latent values transposed to
// a.colT, once for all heads.
func (a *mlaScratch) latents(kb *kvBuf, r0, n, kvl int) error {
	if kb.t == kvQ8_0 {
		return a.latentsQ8(kb, r0, n, kvl)
	}
	w := kb.width
	for p := 0; p < n; p++ {
		row := a.rows[4*p*w : 4*(p+1)*w]
		for j := 0; j < w; j++ {
			var x float32
			if kb.t == kvF32 {
				x = kb.f32[(r0+p)*w+j]
			} else {
				x = quant.F16ToF32(kb.f16[(r0+p)*w+j])
			}
			binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(x))
			a.flat[p*w+j] = x
			if j < kvl && kb.t == kvF32 {
				a.colT[j*n+p] = x
			}
		}
	}
	return nil
}

// latentsQ8 is latents for a q8_0 cache: each row's kvl latent values dequantized from their
// Q8_0 blocks, its rotary key values read as F32.
func (a *mlaScratch) latentsQ8(kb *kvBuf, r0, n, kvl int) error {
	w, qb := kb.width, kvQ8_0.rowBytes(kvl)
	if kb.split != kvl {
		return fmt.Errorf("q8_0 latent cache rows split at %d, want the latent rank %d", kb.split, kvl)
	}
	for p := 0; p < n; p++ {
		q := kb.q[(r0+p)*kb.rb : (r0+p+1)*kb.rb]
		flat := a.flat[p*w : (p+1)*w]
		if err := quant.Dequantize(gguf.Q8_0, q[:qb], flat[:kvl]); err != nil {
			return err
		}
		for j := kvl; j < w; j++ {
			flat[j] = math.Float32frombits(binary.LittleEndian.Uint32(q[qb+4*(j-kvl):]))
		}
		row := a.rows[4*p*w : 4*(p+1)*w]
		for j, x := range flat {
			binary.LittleEndian.PutUint32(row[4*j:], math.Float32bits(x))
		}
		for j := 0; j < kvl; j++ {
			a.colT[j*n+p] = flat[j]
		}
	}
	return nil
}

// f32Matrix is the F32 matrix of rows x cols elements at the start of b.
func f32Matrix(b []byte, rows, cols int) *quant.Matrix {
	return &quant.Matrix{Type: gguf.F32, Rows: rows, Cols: cols, RowBytes: 4 * cols, Data: b[:4*rows*cols]}
}

// attentionMLA is attention for a latent-attention layer (see mlaLayer). The batch's tokens
// are taken slot by slot: the slot's latents are converted to F32 once, then every head runs
// its tokens in chunks as matrix products: the absorbed queries (W_kb^T times the non-rotary
// queries), the scores (latents times [absorbed, rotary] queries, causally bounded), the
// weighted latent sums and their up-projection by W_vb.
func (m *Model) attentionMLA(li int, c *Cache, t int) error {
	cf, sh, s, b := &m.Cfg, &m.Shard, &m.scratch, &c.scr
	L := &m.layers[li]
	a := L.mla
	dim, hd := cf.Dim, cf.HeadDim
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
	ms := &s.mla
	kb := &c.k[li] // f16, f32 or q8_0 (Load refuses q4_0 for latent caches)
	for i0 := 0; i0 < t; {
		// tokens [i0, i1) share a slot; its positions [0, n) are what they attend to.
		i1, n := i0+1, b.pos[i0]+1
		for i1 < t && b.slot[i1] == b.slot[i0] {
			n = max(n, b.pos[i1]+1)
			i1++
		}
		ms.grow(cf, nh, n)
		if err := ms.latents(kb, b.slot[i0]*c.ctx, n, kvl); err != nil {
			return fmt.Errorf("layer %d: latent attention: %w", li, err)
		}
		var lat16 []uint16
		if kb.t == kvF16 {
			lat16 = kb.f16[b.slot[i0]*c.ctx*w : (b.slot[i0]*c.ctx+n)*w]
		}
		lat := f32Matrix(ms.rows, n, w)
		// Many queries (a prefill) over few positions: each head's keys are up-projected from
		// the latents (one product with attn_kv_b's key rows in the file's type, as for any
		// weight) rather than each query absorbed into the latent space by the F32 transpose.
		// (From a q8_0 cache, loading the dequantized latent for a weight taking Q8_0 inputs
		// gives back the cached blocks: Q8_0 quantization is idempotent.)
		direct := i1-i0 >= mlaChunk/2 && n <= 8*(i1-i0)
		if direct {
			for p := 0; p < n; p++ {
				if err := ms.lvecs[p].Load(a.kb[0].Type, ms.flat[p*w:p*w+kvl]); err != nil {
					return fmt.Errorf("layer %d: latent attention: %w", li, err)
				}
			}
		}
		m.pool.For(nh, func(h0, h1 int) {
			var keys *mlaKeys
			if direct {
				keys, _ = ms.keys.Get().(*mlaKeys)
				if keys == nil {
					keys = &mlaKeys{}
				}
				defer ms.keys.Put(keys)
			}
			hs := ms.head(cf, n)
			defer ms.heads.Put(hs)
			for h := h0; h < h1; h++ {
				if direct {
					m.mlaKeys(a, h, keys, ms, n)
				}
				for j0 := i0; j0 < i1 && ms.errs[h] == nil; j0 += mlaChunk {
					ms.errs[h] = m.mlaChunk(a, h, hs, lat, ms.colT, n, j0, min(j0+mlaChunk, i1), b.pos, one, scale, keys, lat16)
				}
			}
		})
		var err error
		for h := 0; h < nh; h++ {
			err = cmp.Or(err, ms.errs[h])
			ms.errs[h] = nil
		}
		if err != nil {
			return fmt.Errorf("layer %d: latent attention: %w", li, err)
		}
		i0 = i1
	}
	return m.attnOut(li, t)
}

// mlaKeys up-projects the n latents of ms.lvecs to head h's keys in keys.k.
func (m *Model) mlaKeys(a *mlaLayer, h int, keys *mlaKeys, ms *mlaScratch, n int) {
	cf := &m.Cfg
	hd, kvl, w := cf.HeadDim, cf.KVLoraRank, cf.KVLoraRank+cf.RopeDim
	nope := hd - cf.RopeDim
	if len(keys.k) < n*hd {
		keys.k = make([]float32, n*hd)
		keys.vecs, keys.ys = make([]quant.Vec, n), make([][]float32, n)
	}
	for p := 0; p < n; p++ {
		keys.ys[p] = keys.k[p*hd : p*hd+nope]
		copy(keys.k[p*hd+nope:(p+1)*hd], ms.flat[p*w+kvl:(p+1)*w])
	}
	quant.MatMul(&quant.Pool{Threads: 1}, a.kb[h], ms.lvecs[:n], keys.ys[:n])
}

// mlaChunk computes head h's attention outputs (into scratch.att) for tokens [j0, j1) of one
// slot, whose latents are lat (n rows), lat16 (as cached, if F16) and colT (their latent part
// transposed, n columns, if not: F32 or dequantized q8_0).
// With keys (the head's up-projected keys) the scores are the queries times the keys, else
// the absorbed queries times the latents.
func (m *Model) mlaChunk(a *mlaLayer, h int, hs *mlaHead, lat *quant.Matrix, colT []float32, n, j0, j1 int, pos []int, one *quant.Pool, scale float32, keys *mlaKeys, lat16 []uint16) error {
	cf, s := &m.Cfg, &m.scratch
	hd, vd, kvl := cf.HeadDim, cf.VHeadDim, cf.KVLoraRank
	nh := m.Shard.H1 - m.Shard.H0
	nt := j1 - j0
	nmax := 0
	for j := 0; j < nt; j++ {
		nmax = max(nmax, pos[j0+j]+1)
	}
	if keys != nil {
		for j := 0; j < nt; j++ {
			q := s.q[(j0+j)*nh*hd+h*hd : (j0+j)*nh*hd+(h+1)*hd]
			for k, x := range q {
				binary.LittleEndian.PutUint32(hs.qb[4*(j*hd+k):], math.Float32bits(x))
			}
		}
		for p := 0; p < nmax; p++ {
			loadF32(&keys.vecs[p], keys.k[p*hd:(p+1)*hd])
			keys.ys[p] = hs.scT[p*nt : (p+1)*nt]
		}
		quant.MatMul(one, f32Matrix(hs.qb, nt, hd), keys.vecs[:nmax], keys.ys[:nmax])
		for j := 0; j < nt; j++ {
			for p := 0; p < nmax; p++ {
				hs.w[j*nmax+p] = hs.scT[p*nt+j]
			}
		}
	} else {
		m.mlaAbsorbed(a, h, hs, lat, j0, nt, nmax, one)
	}
	// the causal softmax: token j's weights over [0, pos+1), zero after it
	for j := 0; j < nt; j++ {
		sc := hs.w[j*nmax : (j+1)*nmax]
		np := pos[j0+j] + 1
		mx := float32(math.Inf(-1))
		for p := 0; p < np; p++ {
			sc[p] *= scale
			mx = max(mx, sc[p])
		}
		var sum float64
		for p := 0; p < np; p++ {
			e := math.Exp(float64(sc[p] - mx))
			sc[p] = float32(e)
			sum += e
		}
		inv := float32(1 / sum)
		wb := hs.wb[4*j*nmax : 4*(j+1)*nmax]
		for p := 0; p < np; p++ {
			sc[p] *= inv
			if lat16 == nil {
				binary.LittleEndian.PutUint32(wb[4*p:], math.Float32bits(sc[p]))
			}
		}
		if lat16 == nil {
			clear(wb[4*np:])
		}
	}
	// weighted latent sums: over an F16 cache, each token's weights rounded to F16 (as ggml
	// rounds the F32 operand of a product with F16 values) times the slot's cached rows; over
	// an F32 one, the weights (nt rows of nmax) times each latent coordinate's
	// column over [0, nmax), which is a prefix of its row in colT
	if lat16 != nil {
		for j := 0; j < nt; j++ {
			out := hs.lctx[j*kvl : (j+1)*kvl]
			clear(out)
			wj := hs.w[j*nmax : j*nmax+pos[j0+j]+1]
			quant.ScaleRoundF16s(wj, 1)
			quant.AxpyF16Rows(out, wj, lat16, lat.Cols, 0)
		}
	} else {
		for k := 0; k < kvl; k++ {
			loadF32(&hs.vecs[k], colT[k*n:k*n+nmax])
			hs.ys[k] = hs.lctxT[k*nt : (k+1)*nt]
		}
		quant.MatMul(one, f32Matrix(hs.wb, nt, nmax), hs.vecs[:kvl], hs.ys[:kvl])
		for j := 0; j < nt; j++ {
			for k := 0; k < kvl; k++ {
				hs.lctx[j*kvl+k] = hs.lctxT[k*nt+j]
			}
		}
	}
	// up-projection by W_vb (in its file type, or F32 for a q8_0 cache) into the head's output
	vb := a.vb[h]
	if a.vbF32 != nil {
		vb = a.vbF32[h]
	}
	for j := 0; j < nt; j++ {
		i := j0 + j
		if err := hs.vecs[j].Load(vb.Type, hs.lctx[j*kvl:(j+1)*kvl]); err != nil {
			return err
		}
		hs.ys[j] = s.att[i*nh*vd+h*vd : i*nh*vd+(h+1)*vd]
	}
	quant.MatMul(one, vb, hs.vecs[:nt], hs.ys[:nt])
	return nil
}

// mlaAbsorbed writes head h's scores for tokens [j0, j0+nt) to hs.w (rows of nmax, the
// chunk's last position + 1): the absorbed queries W_kb^T q_nope next to the rotary queries,
// times the latents.
func (m *Model) mlaAbsorbed(a *mlaLayer, h int, hs *mlaHead, lat *quant.Matrix, j0, nt, nmax int, one *quant.Pool) {
	cf, s := &m.Cfg, &m.scratch
	hd, kvl, w := cf.HeadDim, cf.KVLoraRank, lat.Cols
	nope, nh := hd-cf.RopeDim, m.Shard.H1-m.Shard.H0
	for j := 0; j < nt; j++ {
		q := s.q[(j0+j)*nh*hd+h*hd : (j0+j)*nh*hd+(h+1)*hd]
		loadF32(&hs.vecs[j], q[:nope])
		hs.ys[j] = hs.qcat[j*w : j*w+kvl]
		copy(hs.qcat[j*w+kvl:(j+1)*w], q[nope:])
	}
	quant.MatMul(one, a.kbT[h], hs.vecs[:nt], hs.ys[:nt])
	for j := 0; j < nt; j++ {
		loadF32(&hs.vecs[j], hs.qcat[j*w:(j+1)*w])
		hs.ys[j] = hs.w[j*nmax : (j+1)*nmax]
	}
	quant.MatMul(one, &quant.Matrix{Type: lat.Type, Rows: nmax, Cols: w, RowBytes: lat.RowBytes, Data: lat.Data[:nmax*lat.RowBytes]}, hs.vecs[:nt], hs.ys[:nt])
}

func loadF32(v *quant.Vec, x []float32) {
	if err := v.Load(gguf.F32, x); err != nil {
		panic(err) // F32 loads do not fail
	}
}
