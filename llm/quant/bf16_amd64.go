//go:build amd64 && !noasm

package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

// The BF16 row kernel is the format's rows hook on amd64 (set here rather than in bf16.go's
// register call, which every architecture shares).
func init() {
	lookup(gguf.BF16).rows = rowsBF16
}

//go:noescape
func rowsBF16AVX2(w *byte, stride int, x *uint16, n, rows int, out *float32)

// rowsBF16 computes y[lo:hi] for m's BF16 rows with the AVX2 kernel and the Go tail of
// dotBF16Lanes (bit for bit with it), or reports false where it cannot.
func rowsBF16(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	n := v.N
	n32 := n &^ 31
	if !useAVX2 || n32 == 0 || hi <= lo || n != m.Cols || len(v.U16) < n || m.RowBytes < 2*n {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of n elements each
	_ = y[lo:hi]
	rowsBF16AVX2(&rows[0], m.RowBytes, &v.U16[0], n32, hi-lo, &y[lo])
	if n32 < n {
		for i := lo; i < hi; i++ {
			y[i] = bf16Tail(y[i], m.Data[i*m.RowBytes:(i+1)*m.RowBytes], v.U16[:n], n32)
		}
	}
	return true
}

// bf16Tail adds the products of elements [from, len(x)) to s one after the other.
func bf16Tail(s float32, row []byte, x []uint16, from int) float32 {
	for i := from; i < len(x); i++ {
		s += float32(BF16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * BF16ToF32(x[i]))
	}
	return s
}

// dotBF16Lanes is the Go twin of rowsBF16: the elements below a multiple of 32 into 32
// float32 lanes (element i into lane i%8 of accumulator (i/8)%4), the accumulators and lanes
// added as the kernel adds them, then the remaining elements one after the other.
func dotBF16Lanes(row []byte, x []uint16) float32 {
	var acc [4][8]float32
	n32 := len(x) &^ 31
	for i := 0; i < n32; i++ {
		p := float32(BF16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * BF16ToF32(x[i]))
		acc[i>>3&3][i&7] += p
	}
	var c [8]float32
	for l := range c {
		c[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])
	}
	var h [4]float32
	for j := range h {
		h[j] = c[j] + c[j+4]
	}
	s := (h[0] + h[2]) + (h[1] + h[3])
	return bf16Tail(s, row, x, n32)
}
