//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"golang.org/x/sys/cpu"
)

// vecRef is what gemmQ0x8VNNI reads of one activation vector and where it writes its results.
type vecRef struct {
	q8  *byte    // Vec.Q8
	d   *float32 // Vec.D
	neg *int32   // Vec.Q8Neg8
	out *float32 // ys[t]
}

//go:noescape
func gemmQ0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

//go:noescape
func gemmQ0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

// use512 selects the sixteen-row kernel (Z registers).
var use512 = useVNNI && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// packedBlock is the size of one block of g packed rows: g float32 scales and g x 32 unsigned
// quants.
func packedBlock(g int) int { return g * (4 + 32) }

// minPackedBatch is the smallest batch for which packing eight rows pays for itself.
const minPackedBatch = 4

var packBufs = sync.Pool{New: func() any { return new([]byte) }}

// matMulPacked is MatMul for Q8_0 and Q4_0 with VNNI: each group of eight or sixteen rows is packed once
// (pack) and multiplied by every vector of the batch while it sits in L1. It reports false
// when the kernel does not apply (no VNNI, another type, a small batch).
func matMulPacked(p *Pool, m *Matrix, xs []Vec, ys [][]float32) bool {
	nb := m.Cols / QK8_0
	if !useVNNI || len(xs) < minPackedBatch || nb == 0 || (m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0) {
		return false
	}
	refs := make([]vecRef, len(xs))
	for t := range xs {
		x := &xs[t]
		if x.N != m.Cols || len(x.D) < nb || len(x.Q8Neg8) < nb || len(ys[t]) < m.Rows {
			return false
		}
		refs[t] = vecRef{&x.Q8[0], &x.D[0], &x.Q8Neg8[0], &ys[t][0]}
	}
	shift := 0
	if m.Type == gguf.Q8_0 {
		shift = 4
	}
	g, kernel := 8, gemmQ0x8VNNI
	if use512 {
		g, kernel = 16, gemmQ0x16VNNI
	}
	groups := m.Rows / g
	p.For(groups, func(lo, hi int) {
		bp := packBufs.Get().(*[]byte)
		buf := grow(*bp, nb*packedBlock(g))
		for gi := lo; gi < hi; gi++ {
			pack(m, gi*g, g, nb, buf)
			kernel(&buf[0], nb, shift, &refs[0], len(refs), gi*g*4)
		}
		*bp = buf
		packBufs.Put(bp)
	})
	// Rows past the last whole group: one of eight more where it fits, then row by row.
	r0 := groups * g
	if g == 16 && r0+8 <= m.Rows {
		buf := make([]byte, nb*packedBlock(8))
		pack(m, r0, 8, nb, buf)
		gemmQ0x8VNNI(&buf[0], nb, shift, &refs[0], len(refs), r0*4)
		r0 += 8
	}
	if r0 < m.Rows {
		for t := range xs {
			rowsDot(m, &xs[t], ys[t], r0, m.Rows)
		}
	}
	return true
}

// pack lays out rows r0..r0+g-1 of m block by block: the g rows' scales as float32, then for
// k = 0..7 the quants 4k..4k+3 of row 0, of row 1, ... of row g-1, as unsigned bytes (Q8_0:
// q+128; Q4_0: the nibble, 0..15).
func pack(m *Matrix, r0, g, nb int, buf []byte) {
	pb := packedBlock(g)
	buf = buf[:nb*pb]
	bs := m.Type.TypeSize()
	for r := 0; r < g; r++ {
		row := m.Data[(r0+r)*m.RowBytes : (r0+r)*m.RowBytes+nb*bs]
		for b := 0; b < nb; b++ {
			src := row[b*bs : (b+1)*bs]
			dst := buf[b*pb : (b+1)*pb]
			binary.LittleEndian.PutUint32(dst[4*r:], math.Float32bits(F16ToF32(binary.LittleEndian.Uint16(src))))
			q := dst[4*g+4*r:]
			if m.Type == gguf.Q8_0 {
				for k := 0; k < 8; k++ {
					binary.LittleEndian.PutUint32(q[4*g*k:], binary.LittleEndian.Uint32(src[2+4*k:])^0x80808080)
				}
			} else {
				for k := 0; k < 4; k++ {
					w := binary.LittleEndian.Uint32(src[2+4*k:])
					binary.LittleEndian.PutUint32(q[4*g*k:], w&0x0f0f0f0f)
					binary.LittleEndian.PutUint32(q[4*g*(k+4):], (w>>4)&0x0f0f0f0f)
				}
			}
		}
	}
}
