package quant

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// Interleaved rows. Where the CPU has kernels for them (packGroup), Q8_0 and Q4_0 matrices are
// rearranged once, on first use, into groups of g rows (8 or 16) whose blocks are interleaved,
// so that one vector instruction multiplies four quants of every row of the group by the same
// four activation quants and leaves each row's sum in its own lane. Block b of a group takes
// g times the bytes of one block, as in the file:
//
//	g F16 scales (row 0's first), then, for k = 0..7 (Q8_0) or 0..3 (Q4_0), four bytes of
//	row 0, four of row 1, ... four of row g-1: bytes 2+4k..5+4k of each row's block (Q8_0:
//	the quants 4k..4k+3 with their sign bit flipped, q+128; Q4_0: the packed bytes as they
//	are, whose low nibbles are quants 4k..4k+3 and high nibbles quants 16+4k..19+4k).
//
// Rows past the last whole group keep the file's layout, after the groups. The groups replace
// the rows in memory: a private buffer is rearranged in place; rows in a read-only mapping are
// copied into a new buffer and the mapped pages are released (releaseMapped), so no row is
// resident twice.

// repackMu serializes the first Repack of matrices that several goroutines might share.
var repackMu sync.Mutex

// Repack rearranges m once into the layout of the fastest kernels for its type on this CPU
// (a no-op where that is the file's layout, and after the first call). MatVec and MatMul call
// it; a loader may call it earlier so that loading, not the first token, pays for it.
func (m *Matrix) Repack() {
	if atomic.LoadUint32(&m.prepared) != 0 {
		return
	}
	repackMu.Lock()
	defer repackMu.Unlock()
	if m.prepared != 0 {
		return
	}
	if g := packGroup(m.Type); g > 0 {
		m.repackGroups(g)
	}
	atomic.StoreUint32(&m.prepared, 1)
}

// Interleaved reports the number of rows per interleaved group (0: the file's layout).
func (m *Matrix) Interleaved() int { return m.group }

// repackGroups interleaves m's whole groups of g rows (see the top of this file); m must be
// Q8_0 or Q4_0 in the file's layout.
func (m *Matrix) repackGroups(g int) {
	if m.group != 0 || m.Rows < g || (m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0) {
		return
	}
	n := m.Rows / g * g * m.RowBytes
	old, dst := m.Data, m.Data
	readOnly := readOnlyMapping(old)
	if readOnly {
		dst = make([]byte, len(old))
		copy(dst[n:], old[n:])
	}
	scratch := make([]byte, g*m.RowBytes)
	for off := 0; off < n; off += g * m.RowBytes {
		src := old[off : off+g*m.RowBytes]
		if !readOnly {
			copy(scratch, src)
			src = scratch
		}
		interleave(m.Type, g, m.RowBytes, src, dst[off:off+g*m.RowBytes])
	}
	m.Data, m.group = dst, g
	if readOnly {
		releaseMapped(old)
	}
}

// interleave writes g rows of rb bytes (src, the file's layout) as one group into dst.
func interleave(t gguf.Type, g, rb int, src, dst []byte) {
	bs := t.TypeSize()
	nb := rb / bs
	for r := 0; r < g; r++ {
		row := src[r*rb : (r+1)*rb]
		for b := 0; b < nb; b++ {
			s, d := row[b*bs:(b+1)*bs], dst[b*g*bs:(b+1)*g*bs]
			d[2*r], d[2*r+1] = s[0], s[1]
			q := d[2*g+4*r:]
			for k := 0; k < (bs-2)/4; k++ {
				w := binary.LittleEndian.Uint32(s[2+4*k:])
				if t == gguf.Q8_0 {
					w ^= 0x80808080
				}
				binary.LittleEndian.PutUint32(q[4*g*k:], w)
			}
		}
	}
}

// unpackRow returns row i (inside a group) in the file's layout, in a new slice.
func (m *Matrix) unpackRow(i int) []byte {
	g, bs := m.group, m.Type.TypeSize()
	grp := m.Data[i/g*g*m.RowBytes:]
	r := i % g
	out := make([]byte, m.RowBytes)
	for b := 0; b < m.RowBytes/bs; b++ {
		s, d := grp[b*g*bs:(b+1)*g*bs], out[b*bs:(b+1)*bs]
		d[0], d[1] = s[2*r], s[2*r+1]
		for k := 0; k < (bs-2)/4; k++ {
			w := binary.LittleEndian.Uint32(s[2*g+4*g*k+4*r:])
			if m.Type == gguf.Q8_0 {
				w ^= 0x80808080
			}
			binary.LittleEndian.PutUint32(d[2+4*k:], w)
		}
	}
	return out
}

// matVecGroups is MatVec for an interleaved m: the groups with the assembly where it applies
// (gemvAsm) or the Go twin, then the rows after them as any matrix's.
func matVecGroups(p *Pool, m *Matrix, x *Vec, y []float32) {
	g := m.group
	groups := m.Rows / g
	p.For(groups, func(lo, hi int) {
		if !gemvAsm(m, x, y, lo, hi) {
			gemvGroups(m, x, y, lo, hi)
		}
	})
	if r0 := groups * g; r0 < m.Rows {
		rowsPlain(m, x, y, r0, m.Rows)
	}
}

// matMulGroups is MatMul for an interleaved m: each group against every vector while its
// bytes are in cache.
func matMulGroups(p *Pool, m *Matrix, xs []Vec, ys [][]float32) {
	g := m.group
	groups := m.Rows / g
	p.For(groups, func(lo, hi int) {
		if gemmAsm(m, xs, ys, lo, hi) {
			return
		}
		for gi := lo; gi < hi; gi++ {
			for t := range xs {
				gemvGroups(m, &xs[t], ys[t], gi, gi+1)
			}
		}
	})
	if r0 := groups * g; r0 < m.Rows {
		for t := range xs {
			rowsDot(m, &xs[t], ys[t], r0, m.Rows)
		}
	}
}

// rowsPlain computes y[lo:hi] for rows in the file's layout, with the fastest kernel there is.
func rowsPlain(m *Matrix, x *Vec, y []float32, lo, hi int) {
	if matVecRows(m, x, y, lo, hi) {
		return
	}
	if f := lookup(m.Type); f != nil && f.rows != nil && f.rows(m, x, y, lo, hi) {
		return
	}
	for i := lo; i < hi; i++ {
		y[i] = Dot(m.Type, m.Data[i*m.RowBytes:(i+1)*m.RowBytes], x)
	}
}

// gemvGroups is the Go twin of the interleaved kernels: y for the rows of groups [g0,g1), each
// row's sum in the order and operations of dotQ8_0Generic and dotQ4_0Generic.
func gemvGroups(m *Matrix, x *Vec, y []float32, g0, g1 int) {
	le := binary.LittleEndian
	g, bs := m.group, m.Type.TypeSize()
	nb := m.Cols / QK8_0
	xq := x.Q8[:nb*BlockQ8_0]
	for gi := g0; gi < g1; gi++ {
		grp := m.Data[gi*g*m.RowBytes : (gi+1)*g*m.RowBytes]
		for r := 0; r < g; r++ {
			var sum float32
			for b := 0; b < nb; b++ {
				pb := grp[b*g*bs : (b+1)*g*bs]
				xb := xq[b*BlockQ8_0 : (b+1)*BlockQ8_0]
				q := pb[2*g+4*r:]
				var acc int32
				if m.Type == gguf.Q8_0 {
					for k := 0; k < 8; k++ {
						for j := 0; j < 4; j++ {
							acc += (int32(q[4*g*k+j]) - 128) * int32(int8(xb[2+4*k+j]))
						}
					}
				} else {
					for k := 0; k < 4; k++ {
						for j := 0; j < 4; j++ {
							v := q[4*g*k+j]
							acc += (int32(v&0xf)-8)*int32(int8(xb[2+4*k+j])) + (int32(v>>4)-8)*int32(int8(xb[18+4*k+j]))
						}
					}
				}
				sum += float32(acc) * (F16ToF32(le.Uint16(pb[2*r:])) * F16ToF32(le.Uint16(xb)))
			}
			y[gi*g+r] = sum
		}
	}
}
