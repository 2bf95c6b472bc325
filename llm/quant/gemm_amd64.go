//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/gorun-hpc/gorun/llm/gguf"
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

// packedBlock is the size of one block of eight packed rows: eight float32 scales and 8x32
// unsigned quants.
const packedBlock = 32 + 8*32

// minPackedBatch is the smallest batch for which packing eight rows pays for itself.
const minPackedBatch = 4

var packBufs = sync.Pool{New: func() any { return new([]byte) }}

// matMulPacked is MatMul for Q8_0 and Q4_0 with VNNI: each group of eight rows is packed once
// (pack8) and multiplied by every vector of the batch while it sits in L1. It reports false
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
	groups := m.Rows / 8
	p.For(groups, func(lo, hi int) {
		bp := packBufs.Get().(*[]byte)
		buf := grow(*bp, nb*packedBlock)
		for g := lo; g < hi; g++ {
			pack8(m, g*8, nb, buf)
			gemmQ0x8VNNI(&buf[0], nb, shift, &refs[0], len(refs), g*8*4)
		}
		*bp = buf
		packBufs.Put(bp)
	})
	// Rows past the last whole group of eight.
	if r0 := groups * 8; r0 < m.Rows {
		for t := range xs {
			rowsDot(m, &xs[t], ys[t], r0, m.Rows)
		}
	}
	return true
}

// pack8 lays out rows r0..r0+7 of m block by block: the eight rows' scales as float32, then
// for k = 0..7 the quants 4k..4k+3 of row 0, of row 1, ... of row 7, as unsigned bytes (Q8_0:
// q+128; Q4_0: the nibble, 0..15).
func pack8(m *Matrix, r0, nb int, buf []byte) {
	buf = buf[:nb*packedBlock]
	bs := m.Type.TypeSize()
	for r := 0; r < 8; r++ {
		row := m.Data[(r0+r)*m.RowBytes : (r0+r)*m.RowBytes+nb*bs]
		for b := 0; b < nb; b++ {
			src := row[b*bs : (b+1)*bs]
			dst := buf[b*packedBlock : (b+1)*packedBlock]
			binary.LittleEndian.PutUint32(dst[4*r:], math.Float32bits(F16ToF32(binary.LittleEndian.Uint16(src))))
			q := dst[32+4*r:]
			if m.Type == gguf.Q8_0 {
				for k := 0; k < 8; k++ {
					binary.LittleEndian.PutUint32(q[32*k:], binary.LittleEndian.Uint32(src[2+4*k:])^0x80808080)
				}
			} else {
				for k := 0; k < 4; k++ {
					w := binary.LittleEndian.Uint32(src[2+4*k:])
					binary.LittleEndian.PutUint32(q[32*k:], w&0x0f0f0f0f)
					binary.LittleEndian.PutUint32(q[32*(k+4):], (w>>4)&0x0f0f0f0f)
				}
			}
		}
	}
}
