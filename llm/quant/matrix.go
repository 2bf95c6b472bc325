package quant

import (
	"fmt"
	"sync"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Matrix is a row-major weight matrix of Rows rows of Cols elements of one type; Data holds
// Rows*RowBytes bytes (typically a slice of a mapped GGUF file). Repack (which MatVec and
// MatMul call on first use) may interleave the rows in place for the kernels (see repack.go):
// read rows through Row, not Data, after that.
type Matrix struct {
	Type     gguf.Type
	Rows     int
	Cols     int
	RowBytes int
	Data     []byte

	// group is 0 while Data holds rows in the file's layout, else the number of rows
	// interleaved per group (repack.go); prepared (atomic) is 1 once Repack has run.
	group    int
	prepared uint32
}

// NewMatrix checks that data holds rows x cols elements of type t.
func NewMatrix(t gguf.Type, rows, cols int, data []byte) (*Matrix, error) {
	if !Supported(t) {
		return nil, fmt.Errorf("quant: tensor type %s is not supported", t)
	}
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != rb*int64(rows) {
		return nil, fmt.Errorf("quant: %dx%d %s matrix needs %d bytes, have %d", rows, cols, t, rb*int64(rows), len(data))
	}
	return &Matrix{Type: t, Rows: rows, Cols: cols, RowBytes: int(rb), Data: data}, nil
}

// Row returns the bytes of row i in the file's layout: a slice of Data, or a copy where the
// row is interleaved with others.
func (m *Matrix) Row(i int) []byte {
	if g := m.group; g > 0 && i < m.Rows/g*g {
		return m.unpackRow(i)
	}
	return m.Data[i*m.RowBytes : (i+1)*m.RowBytes]
}

// Pool splits loops over rows across a fixed number of goroutines (1: the caller's).
type Pool struct{ Threads int }

// For runs fn over [0,n) in contiguous chunks, one per thread, and waits.
func (p *Pool) For(n int, fn func(lo, hi int)) {
	t := 1
	if p != nil && p.Threads > 1 {
		t = min(p.Threads, n)
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := 0; k < t; k++ {
		lo, hi := n*k/t, n*(k+1)/t
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// MatVec computes y[i] = row i of m · x for every row; x must be loaded for m.Type.
func MatVec(p *Pool, m *Matrix, x *Vec, y []float32) {
	y = y[:m.Rows]
	m.Repack()
	if m.group > 0 {
		matVecGroups(p, m, x, y)
		return
	}
	// One row after the other: a single sequential stream through the weights is what the
	// hardware prefetchers serve fastest (the four-row kernels, which read four rows at once,
	// pull half the bandwidth from memory; they serve MatMul, whose tiles sit in cache).
	p.For(m.Rows, func(lo, hi int) { rowsPlain(m, x, y, lo, hi) })
}

// MatMul computes ys[t][i] = row i of m · xs[t] for a batch of vectors (prefill). Rows are
// visited in tiles and every vector of the batch is applied to a tile while it is in cache, so
// each weight byte is read from memory once per batch rather than once per vector.
func MatMul(p *Pool, m *Matrix, xs []Vec, ys [][]float32) {
	m.Repack()
	if m.group > 0 {
		matMulGroups(p, m, xs, ys)
		return
	}
	const tile = 16
	tiles := (m.Rows + tile - 1) / tile
	p.For(tiles, func(lo, hi int) {
		for tb := lo; tb < hi; tb++ {
			r0, r1 := tb*tile, min((tb+1)*tile, m.Rows)
			t := kRowsN(m, xs, ys, r0, r1) // the vectors done by four- or eight-vector kernels
			for ; t+2 <= len(xs); t += 2 {
				rowsDot2(m, &xs[t], &xs[t+1], ys[t], ys[t+1], r0, r1)
			}
			if t < len(xs) {
				rowsDot(m, &xs[t], ys[t], r0, r1)
			}
		}
	})
}

// rowsDot computes y[i] for rows [lo,hi), four at a time where a kernel allows.
func rowsDot(m *Matrix, x *Vec, y []float32, lo, hi int) {
	i := lo
	for ; i+4 <= hi; i += 4 {
		if !dot4(m, i, x, y) {
			break
		}
	}
	if i < hi {
		rowsPlain(m, x, y, i, hi)
	}
}

// rowsDot2 is rowsDot for two vectors, with the two-vector kernels where they exist (one
// pass over the rows for both).
func rowsDot2(m *Matrix, a, b *Vec, ya, yb []float32, lo, hi int) {
	if kRows2(m, a, b, ya, yb, lo, hi) {
		return
	}
	i := lo
	for ; i+4 <= hi; i += 4 {
		if !dot4x2(m, i, a, b, ya, yb) {
			break
		}
	}
	rowsDot(m, a, ya, i, hi)
	rowsDot(m, b, yb, i, hi)
}
