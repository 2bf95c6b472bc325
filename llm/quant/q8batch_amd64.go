//go:build amd64 && !noasm

package quant

// vecRefQ8 is what the ordered Q8_0 gemm kernels read of one activation vector and where they
// write its results.
type vecRefQ8 struct {
	q8   *byte    // Vec.Q8
	d    *float32 // Vec.D
	corr *int32   // Vec.Q8Neg128
	out  *float32 // ys[t]
}

//go:noescape
func gemmQ8_0x8Ordered(pack *byte, nb int, vecs *vecRefQ8, nvec, off int)

//go:noescape
func gemmQ8_0x16Ordered(pack *byte, nb int, vecs *vecRefQ8, nvec, off int)

// gemmOrderedAsm computes ys for the rows of groups [g0,g1) of an interleaved Q8_0 m with the
// ordered kernels (each group against every vector while it is in cache), or reports false.
func gemmOrderedAsm(m *Matrix, xs []Vec, ys [][]float32, refs []vecRefQ8, g0, g1 int) bool {
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
	for t := range xs {
		refs[t] = vecRefQ8{&xs[t].Q8[0], &xs[t].D[0], &xs[t].Q8Neg128[0], &ys[t][0]}
	}
	g := m.group
	k := gemmQ8_0x16Ordered
	if g == 8 {
		k = gemmQ8_0x8Ordered
	}
	for gi := g0; gi < g1; gi++ {
		w := m.Data[gi*g*m.RowBytes : (gi+1)*g*m.RowBytes]
		k(&w[0], nb, &refs[0], len(xs), gi*g*4)
	}
	return true
}
