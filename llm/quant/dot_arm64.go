//go:build arm64 && !noasm

package quant

import "github.com/gorun-hpc/gorun/llm/gguf"

//go:noescape
func matVecQ8_0NEON(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32, dp bool)

//go:noescape
func matVecQ4_0NEON(w *byte, stride int, x *byte, xd *float32, sum8 *int32, nb, rows int, out *float32, dp bool)

//go:noescape
func matVecIQ4_NLNEON(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32, dp bool)

// kernelISA names the instruction set of the matrix-vector kernel for weights of type t, ""
// for the pure-Go one.
func kernelISA(t gguf.Type) string {
	switch t {
	case gguf.Q8_0, gguf.Q4_0, gguf.IQ4_NL, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.IQ4_XS:
		if useDotprod {
			return "NEON dotprod"
		}
		return "NEON"
	case gguf.F32, gguf.F16:
		return "NEON"
	}
	return ""
}

// Kernel names the dot-product implementation in use.
func Kernel() string {
	if useDotprod {
		return "neon+dotprod"
	}
	return "neon"
}

// matVecRows computes y[lo:hi] with the NEON row kernels for Q8_0, Q4_0 and IQ4_NL weights,
// and reports whether it did.
func matVecRows(m *Matrix, v *Vec, y []float32, lo, hi int) bool {
	nb := v.N / QK8_0
	if nb == 0 || hi <= lo || v.N != m.Cols || len(v.D) < nb || len(v.Q8Sum8) < nb ||
		(m.Type != gguf.Q8_0 && m.Type != gguf.Q4_0 && m.Type != gguf.IQ4_NL) {
		return false
	}
	rows := m.Data[lo*m.RowBytes : hi*m.RowBytes] // hi-lo whole rows of nb blocks each
	_, _ = v.Q8[nb*BlockQ8_0-1], v.D[nb-1]
	out := &y[lo:hi][0]
	switch m.Type {
	case gguf.Q8_0:
		matVecQ8_0NEON(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, out, useDotprod)
	case gguf.Q4_0:
		matVecQ4_0NEON(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], &v.Q8Sum8[0], nb, hi-lo, out, useDotprod)
	default:
		matVecIQ4_NLNEON(&rows[0], m.RowBytes, &v.Q8[0], &v.D[0], nb, hi-lo, out, useDotprod)
	}
	return true
}

func dot4(m *Matrix, i int, v *Vec, y []float32) bool { return matVecRows(m, v, y, i, i+4) }

// rowVec runs the row kernel on one row of nb blocks of type t.
func rowVec(t gguf.Type, w []byte, v *Vec) (float32, bool) {
	var y [1]float32
	m := Matrix{Type: t, Rows: 1, Cols: v.N, RowBytes: len(w), Data: w}
	if len(w) < (v.N/QK8_0)*t.TypeSize() {
		return 0, false
	}
	m.RowBytes = (v.N / QK8_0) * t.TypeSize()
	m.Data = w[:m.RowBytes]
	return y[0], matVecRows(&m, v, y[:], 0, 1)
}

func dotQ4_0Vec(w []byte, v *Vec) float32 {
	if s, ok := rowVec(gguf.Q4_0, w, v); ok {
		return s
	}
	return dotQ4_0Generic(w, v.Q8)
}

func dotQ8_0Vec(w []byte, v *Vec) float32 {
	if s, ok := rowVec(gguf.Q8_0, w, v); ok {
		return s
	}
	return dotQ8_0Generic(w, v.Q8)
}

func dotIQ4_NLVec(w []byte, v *Vec) float32 {
	if s, ok := rowVec(gguf.IQ4_NL, w, v); ok {
		return s
	}
	return dotIQ4_NL(w, v)
}
