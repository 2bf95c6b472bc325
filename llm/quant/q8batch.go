package quant

import (
	"sync"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// MatMulExact is MatMul with every result of a Q8_0 matrix equal, bit for bit, to MatVec's for
// the same vector (MatMul's Q8_0 kernels add up each block's integer total, a different
// order of float sums): on interleaved rows each group of rows is still applied to every
// vector while it is in cache, with the summation of the one-vector kernel. Other types
// are MatMul's.
func MatMulExact(p *Pool, m *Matrix, xs []Vec, ys [][]float32) {
	m.Repack()
	if m.Type != gguf.Q8_0 || m.group == 0 || len(xs) == 1 {
		if m.Type == gguf.Q8_0 {
			// the file's layout or one vector: MatVec
			for t := range xs {
				MatVec(p, m, &xs[t], ys[t])
			}
			return
		}
		MatMul(p, m, xs, ys)
		return
	}
	g := m.group
	groups := m.Rows / g
	p.For(groups, func(lo, hi int) {
		rp := refPool.Get().(*[]vecRefQ8)
		if len(*rp) < len(xs) {
			*rp = make([]vecRefQ8, len(xs))
		}
		ok := gemmOrderedAsm(m, xs, ys, *rp, lo, hi)
		refPool.Put(rp)
		if ok {
			return
		}
		// MatVec's group kernel (or its Go twin), one vector at a time
		for t := range xs {
			if !gemvAsm(m, &xs[t], ys[t], lo, hi) {
				gemvGroups(m, &xs[t], ys[t], lo, hi)
			}
		}
	})
	if r0 := groups * g; r0 < m.Rows {
		for t := range xs {
			rowsPlain(m, &xs[t], ys[t], r0, m.Rows)
		}
	}
}

var refPool = sync.Pool{New: func() any { return new([]vecRefQ8) }}
