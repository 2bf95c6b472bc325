//go:build amd64 && !noasm

package quant

import (
	"github.com/gorun-hpc/gorun/llm/gguf"
	"golang.org/x/sys/cpu"
)

//go:noescape
func rowsQ5_0AVX2(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, rows int, out *float32)

//go:noescape
func rowsQ5_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, rows int, out *float32)

//go:noescape
func rowsQ4_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, rows int, out *float32)

// The two-row forms: rows 2p and 2p+1 of w for p < pairs into out[2p] and out[2p+1].
//
//go:noescape
func rowsR2Q5_0AVX2(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, pairs int, out *float32)

//go:noescape
func rowsR2Q5_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)

//go:noescape
func rowsR2Q4_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)

// The same in AVX-512 BW/VL/VNNI instructions (legacy512).
//
//go:noescape
func rowsR2Q5_0VNNI(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, pairs int, out *float32)

//go:noescape
func rowsR2Q5_1VNNI(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)

//go:noescape
func rowsR2Q4_1VNNI(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)

// hasBW: AVX-512 BW, which the VNNI forms of the legacy kernels also use (KMOVD, VPADDB under
// a mask).
var hasBW = cpu.X86.HasAVX512BW

// legacy512 reports whether the AVX-512 forms of the legacy kernels run (useVNNI, which the
// tests switch off to run the AVX2 forms, and BW).
func legacy512() bool { return useVNNI && hasBW }

// legacyRowsOK reports whether the legacy row kernels can run y[lo:hi] of m against v: AVX2, a
// vector of m.Cols elements in whole blocks with its scales (and sums) converted, rows of nb
// blocks of bs bytes.
func legacyRowsOK(m *Matrix, v *Vec, lo, hi, bs int) bool {
	nb := v.N / QK8_0
	return useAVX2 && nb > 0 && hi > lo && v.N == m.Cols && v.N == nb*QK8_0 && m.RowBytes >= nb*bs &&
		len(v.Q8) >= nb*BlockQ8_0 && len(v.D) >= nb
}

// legacyDecode is one type's decode kernels: two rows per pass (AVX-512 and AVX2 forms) and
// one row; S is the type of the activations' per-block sums the kernels take (Q8_0's integer
// sums for Q5_0, Q8_1's scaled sums for Q5_1 and Q4_1).
type legacyDecode[S int32 | float32] struct {
	r2VNNI, r2AVX2, r1 func(w *byte, stride int, x *byte, xd *float32, xs *S, nb, rows int, out *float32)
}

var (
	q5_0Decode = legacyDecode[int32]{rowsR2Q5_0VNNI, rowsR2Q5_0AVX2, rowsQ5_0AVX2}
	q5_1Decode = legacyDecode[float32]{rowsR2Q5_1VNNI, rowsR2Q5_1AVX2, rowsQ5_1AVX2}
	q4_1Decode = legacyDecode[float32]{rowsR2Q4_1VNNI, rowsR2Q4_1AVX2, rowsQ4_1AVX2}
)

// legacyRows computes y[lo:hi] for m's rows of blocks of bs bytes with k's kernels (the Go dot
// function bit for bit), or reports false where they cannot run.
func legacyRows[S int32 | float32](m *Matrix, v *Vec, y []float32, lo, hi, bs int, sums []S, k *legacyDecode[S]) bool {
	nb := v.N / QK8_0
	if !legacyRowsOK(m, v, lo, hi, bs) || len(sums) < nb {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_ = y[lo:hi]
	pairs := (hi - lo) / 2
	if pairs > 0 {
		r2 := k.r2AVX2
		if legacy512() {
			r2 = k.r2VNNI
		}
		r2(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &sums[0], nb, pairs, &y[lo])
	}
	if lo+2*pairs < hi {
		k.r1(&rows[2*pairs*m.RowBytes], m.RowBytes, &v.Q8[0], &v.D[0], &sums[0], nb, 1, &y[hi-1])
	}
	return true
}

// rowsQ5_0 computes y[lo:hi] for m's Q5_0 rows against Q8_0 (dotQ5_0 bit for bit).
func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return legacyRows(m, v, y, lo, hi, BlockQ5_0, v.Q8Sum8, &q5_0Decode)
}

// rowsQ5_1 computes y[lo:hi] for m's Q5_1 rows against Q8_1 (dotQ5_1 bit for bit).
func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return legacyRows(m, v, y, lo, hi, BlockQ5_1, v.S, &q5_1Decode)
}

// rowsQ4_1 computes y[lo:hi] for m's Q4_1 rows against Q8_1 (dotQ4_1 bit for bit).
func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	return legacyRows(m, v, y, lo, hi, BlockQ4_1, v.S, &q4_1Decode)
}

// useLegacy2 selects the two-vector kernels in MatMul (off: the one-vector kernel per vector;
// benchmarks compare the two).
var useLegacy2 = true

//go:noescape
func rows2Q5_0AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *int32, nb, rows int, out *float32)

//go:noescape
func rows2Q5_1AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)

//go:noescape
func rows2Q4_1AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)

//go:noescape
func rows2Q5_0VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *int32, nb, rows int, out *float32)

//go:noescape
func rows2Q5_1VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)

//go:noescape
func rows2Q4_1VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)

// legacyRows2 computes ya[lo:hi] and yb[lo:hi] for m's Q4_1, Q5_0 or Q5_1 rows against two
// vectors in one pass over the weights (each result the one-vector kernel's, bit for bit), or
// reports false where it cannot.
func legacyRows2(m *Matrix, a, b *Vec, ya, yb []float32, lo, hi int) bool {
	if !useLegacy2 {
		return false
	}
	bs := m.Type.TypeSize()
	nb := a.N / QK8_0
	if !legacyRowsOK(m, a, lo, hi, bs) || !legacyRowsOK(m, b, lo, hi, bs) {
		return false
	}
	if m.Type == gguf.Q5_0 {
		if len(a.Q8Sum8) < nb || len(b.Q8Sum8) < nb {
			return false
		}
	} else if len(a.S) < nb || len(b.S) < nb {
		return false
	}
	_, _ = ya[lo:hi], yb[lo:hi]
	k512 := legacy512()
	var out [2 * 16]float32 // on the stack: the kernels are called directly (noescape)
	for r0 := lo; r0 < hi; r0 += 16 {
		n := min(16, hi-r0)
		w := &m.Data[r0*m.RowBytes : (r0+n)*m.RowBytes][0]
		switch {
		case m.Type == gguf.Q5_0 && k512:
			rows2Q5_0VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.Q8Sum8[0], &b.Q8Sum8[0], nb, n, &out[0])
		case m.Type == gguf.Q5_0:
			rows2Q5_0AVX2(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.Q8Sum8[0], &b.Q8Sum8[0], nb, n, &out[0])
		case m.Type == gguf.Q5_1 && k512:
			rows2Q5_1VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.S[0], &b.S[0], nb, n, &out[0])
		case m.Type == gguf.Q5_1:
			rows2Q5_1AVX2(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.S[0], &b.S[0], nb, n, &out[0])
		case k512:
			rows2Q4_1VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.S[0], &b.S[0], nb, n, &out[0])
		default:
			rows2Q4_1AVX2(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &a.D[0], &b.D[0], &a.S[0], &b.S[0], nb, n, &out[0])
		}
		for i := 0; i < n; i++ {
			ya[r0+i], yb[r0+i] = out[2*i], out[2*i+1]
		}
	}
	return true
}

// The four-vector kernels (AVX-512 BW/VL/VNNI): rows against x0..x3 into out[4r..4r+3].
//
//go:noescape
func rows4Q5_0VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *int32, nb, rows int, out *float32)

//go:noescape
func rows4Q5_1VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *float32, nb, rows int, out *float32)

//go:noescape
func rows4Q4_1VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *float32, nb, rows int, out *float32)

//go:noescape
func rows8Q5_0VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *int32, nb, rows int, out *float32)

//go:noescape
func rows8Q5_1VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *float32, nb, rows int, out *float32)

//go:noescape
func rows8Q4_1VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *float32, nb, rows int, out *float32)

// useLegacy8 selects the eight-vector kernels in MatMul (off: four vectors at a time).
var useLegacy8 = true

// legacyRows8 is legacyRows4 for eight vectors.
func legacyRows8(m *Matrix, xs []Vec, ys [][]float32, lo, hi int) bool {
	if !useLegacy8 || !legacy4OK(m, xs, ys, 8, lo, hi) {
		return false
	}
	nb := xs[0].N / QK8_0
	x := xs[:8]
	var out [8 * 16]float32 // on the stack: the kernels are called directly (noescape)
	for r0 := lo; r0 < hi; r0 += 16 {
		n := min(16, hi-r0)
		w := &m.Data[r0*m.RowBytes : (r0+n)*m.RowBytes][0]
		switch m.Type {
		case gguf.Q5_0:
			rows8Q5_0VNNI(w, m.RowBytes, &x[0].Q8[0], &x[1].Q8[0], &x[2].Q8[0], &x[3].Q8[0], &x[4].Q8[0], &x[5].Q8[0], &x[6].Q8[0], &x[7].Q8[0],
				&x[0].D[0], &x[1].D[0], &x[2].D[0], &x[3].D[0], &x[4].D[0], &x[5].D[0], &x[6].D[0], &x[7].D[0],
				&x[0].Q8Sum8[0], &x[1].Q8Sum8[0], &x[2].Q8Sum8[0], &x[3].Q8Sum8[0], &x[4].Q8Sum8[0], &x[5].Q8Sum8[0], &x[6].Q8Sum8[0], &x[7].Q8Sum8[0], nb, n, &out[0])
		case gguf.Q5_1:
			rows8Q5_1VNNI(w, m.RowBytes, &x[0].Q8[0], &x[1].Q8[0], &x[2].Q8[0], &x[3].Q8[0], &x[4].Q8[0], &x[5].Q8[0], &x[6].Q8[0], &x[7].Q8[0],
				&x[0].D[0], &x[1].D[0], &x[2].D[0], &x[3].D[0], &x[4].D[0], &x[5].D[0], &x[6].D[0], &x[7].D[0],
				&x[0].S[0], &x[1].S[0], &x[2].S[0], &x[3].S[0], &x[4].S[0], &x[5].S[0], &x[6].S[0], &x[7].S[0], nb, n, &out[0])
		default:
			rows8Q4_1VNNI(w, m.RowBytes, &x[0].Q8[0], &x[1].Q8[0], &x[2].Q8[0], &x[3].Q8[0], &x[4].Q8[0], &x[5].Q8[0], &x[6].Q8[0], &x[7].Q8[0],
				&x[0].D[0], &x[1].D[0], &x[2].D[0], &x[3].D[0], &x[4].D[0], &x[5].D[0], &x[6].D[0], &x[7].D[0],
				&x[0].S[0], &x[1].S[0], &x[2].S[0], &x[3].S[0], &x[4].S[0], &x[5].S[0], &x[6].S[0], &x[7].S[0], nb, n, &out[0])
		}
		for i := 0; i < n; i++ {
			for k := range 8 {
				ys[k][r0+i] = out[8*i+k]
			}
		}
	}
	return true
}

// legacy4OK reports whether the four- and eight-vector kernels can run ys[k][lo:hi] for
// k < nv of m against xs[:nv]: the AVX-512 forms, a legacy type, rows of a multiple of four
// blocks, every vector loaded for it.
func legacy4OK(m *Matrix, xs []Vec, ys [][]float32, nv, lo, hi int) bool {
	if !legacy512() || len(xs) < nv || len(ys) < nv {
		return false
	}
	switch m.Type {
	case gguf.Q4_1, gguf.Q5_0, gguf.Q5_1:
	default:
		return false
	}
	nb := xs[0].N / QK8_0
	if nb%4 != 0 {
		return false
	}
	bs := m.Type.TypeSize()
	for k := range nv {
		x := &xs[k]
		if !legacyRowsOK(m, x, lo, hi, bs) || x.N != xs[0].N {
			return false
		}
		if m.Type == gguf.Q5_0 && len(x.Q8Sum8) < nb || m.Type != gguf.Q5_0 && len(x.S) < nb {
			return false
		}
		if len(ys[k]) < hi {
			return false
		}
	}
	return true
}

// useLegacy4 selects the four-vector kernels in MatMul (off: the two-vector kernels;
// benchmarks compare the two).
var useLegacy4 = true

// legacyRows4 computes ys[k][lo:hi] for k < 4 for m's Q4_1, Q5_0 or Q5_1 rows against four
// vectors in one pass over the weights (each result the Go twin's, bit for bit), or reports
// false where it cannot: it needs the AVX-512 forms and rows of a multiple of four blocks.
func legacyRows4(m *Matrix, xs []Vec, ys [][]float32, lo, hi int) bool {
	if !useLegacy4 || !legacy4OK(m, xs, ys, 4, lo, hi) {
		return false
	}
	nb := xs[0].N / QK8_0
	a, b, c, d := &xs[0], &xs[1], &xs[2], &xs[3]
	var out [4 * 16]float32 // on the stack: the kernels are called directly (noescape)
	for r0 := lo; r0 < hi; r0 += 16 {
		n := min(16, hi-r0)
		w := &m.Data[r0*m.RowBytes : (r0+n)*m.RowBytes][0]
		switch m.Type {
		case gguf.Q5_0:
			rows4Q5_0VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &c.Q8[0], &d.Q8[0], &a.D[0], &b.D[0], &c.D[0], &d.D[0],
				&a.Q8Sum8[0], &b.Q8Sum8[0], &c.Q8Sum8[0], &d.Q8Sum8[0], nb, n, &out[0])
		case gguf.Q5_1:
			rows4Q5_1VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &c.Q8[0], &d.Q8[0], &a.D[0], &b.D[0], &c.D[0], &d.D[0],
				&a.S[0], &b.S[0], &c.S[0], &d.S[0], nb, n, &out[0])
		default:
			rows4Q4_1VNNI(w, m.RowBytes, &a.Q8[0], &b.Q8[0], &c.Q8[0], &d.Q8[0], &a.D[0], &b.D[0], &c.D[0], &d.D[0],
				&a.S[0], &b.S[0], &c.S[0], &d.S[0], nb, n, &out[0])
		}
		for i := 0; i < n; i++ {
			ys[0][r0+i], ys[1][r0+i], ys[2][r0+i], ys[3][r0+i] = out[4*i], out[4*i+1], out[4*i+2], out[4*i+3]
		}
	}
	return true
}
