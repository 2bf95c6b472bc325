//go:build amd64 && !noasm

package quant

import (
	"github.com/gorun-hpc/gorun/llm/gguf"
	"golang.org/x/sys/cpu"
)

// vecRef is what the gemm kernels read of one activation vector and where they write its
// results.
type vecRef struct {
	q8  *byte    // Vec.Q8
	d   *float32 // Vec.D
	neg *int32   // Vec.Q8Neg8
	out *float32 // ys[t]
}

// The kernels on interleaved rows (repack.go), eight rows (Y registers, AVX-512 VL) or sixteen
// (Z registers) per group. gemv: groups consecutive groups against one vector. gemm: one group
// against nvec vectors, two at a time, results at byte offset off of each vector's output.

//go:noescape
func gemmQ8_0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

//go:noescape
func gemmQ8_0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

//go:noescape
func gemmQ4_0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

//go:noescape
func gemmQ4_0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)

//go:noescape
func gemvQ8_0x8VNNI(pack *byte, nb int, x *byte, d *float32, corr *int32, groups int, out *float32)

//go:noescape
func gemvQ8_0x16VNNI(pack *byte, nb int, x *byte, d *float32, corr *int32, groups int, out *float32)

//go:noescape
func gemvQ4_0x8VNNI(pack *byte, nb, shift int, x *byte, d *float32, neg *int32, groups int, out *float32)

//go:noescape
func gemvQ4_0x16VNNI(pack *byte, nb, shift int, x *byte, d *float32, neg *int32, groups int, out *float32)

// use512 selects sixteen-row groups (Z registers).
var use512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// packGroup is the number of rows per interleaved group for weights of type t: 16 or 8 where
// the VNNI kernels run, 0 (the file's layout) elsewhere.
func packGroup(t gguf.Type) int {
	if !useVNNI || (t != gguf.Q8_0 && t != gguf.Q4_0) {
		return 0
	}
	if use512 {
		return 16
	}
	return 8
}

// kernelArgs checks that x fits m for the assembly and returns the blocks per row.
func kernelArgs(m *Matrix, x *Vec) (nb int, ok bool) {
	nb = m.Cols / QK8_0
	if !useVNNI || (m.group != 8 && (m.group != 16 || !use512)) || nb == 0 || x.N != m.Cols ||
		len(x.Q8) < nb*BlockQ8_0 || len(x.D) < nb || len(x.Q8Neg8) < nb || len(x.Q8Neg128) < 8*nb {
		return 0, false
	}
	return nb, true
}

// gemv runs the one-vector kernel for m's type and group on groups consecutive groups.
func gemv(m *Matrix, w []byte, nb int, x *Vec, groups int, out []float32) {
	switch {
	case m.Type == gguf.Q8_0 && m.group == 8:
		gemvQ8_0x8VNNI(&w[0], nb, &x.Q8[0], &x.D[0], &x.Q8Neg128[0], groups, &out[0])
	case m.Type == gguf.Q8_0:
		gemvQ8_0x16VNNI(&w[0], nb, &x.Q8[0], &x.D[0], &x.Q8Neg128[0], groups, &out[0])
	case m.group == 8:
		gemvQ4_0x8VNNI(&w[0], nb, 0, &x.Q8[0], &x.D[0], &x.Q8Neg8[0], groups, &out[0])
	default:
		gemvQ4_0x16VNNI(&w[0], nb, 0, &x.Q8[0], &x.D[0], &x.Q8Neg8[0], groups, &out[0])
	}
}

// gemvAsm computes y for the rows of groups [g0,g1) of an interleaved m, or reports false.
func gemvAsm(m *Matrix, x *Vec, y []float32, g0, g1 int) bool {
	nb, ok := kernelArgs(m, x)
	if !ok || g1 <= g0 {
		return ok
	}
	g := m.group
	gemv(m, m.Data[g0*g*m.RowBytes:g1*g*m.RowBytes], nb, x, g1-g0, y[g0*g:g1*g])
	return true
}

// gemmAsm computes ys for the rows of groups [g0,g1) of an interleaved m, each group against
// every vector while it is in cache, or reports false.
func gemmAsm(m *Matrix, xs []Vec, ys [][]float32, g0, g1 int) bool {
	g := m.group
	var nb int
	for t := range xs {
		var ok bool
		if nb, ok = kernelArgs(m, &xs[t]); !ok || len(ys[t]) < m.Rows {
			return false
		}
	}
	if len(xs) == 0 || g1 <= g0 {
		return true
	}
	refs := make([]vecRef, len(xs))
	for t := range xs {
		refs[t] = vecRef{&xs[t].Q8[0], &xs[t].D[0], &xs[t].Q8Neg8[0], &ys[t][0]}
	}
	k, shift := gemmQ4_0x8VNNI, 0
	switch {
	case m.Type == gguf.Q8_0 && g == 8:
		k, shift = gemmQ8_0x8VNNI, 4
	case m.Type == gguf.Q8_0:
		k, shift = gemmQ8_0x16VNNI, 4
	case g == 16:
		k = gemmQ4_0x16VNNI
	}
	for gi := g0; gi < g1; gi++ {
		w := m.Data[gi*g*m.RowBytes : (gi+1)*g*m.RowBytes]
		k(&w[0], nb, shift, &refs[0], len(refs), gi*g*4)
	}
	return true
}
