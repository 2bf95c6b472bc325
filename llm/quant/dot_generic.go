//go:build (!amd64 && !arm64) || noasm

package quant

import "github.com/gorun-hpc/gorun/llm/gguf"

// The pure-Go kernels where there is no assembly (amd64's are wired in dot_amd64.go,
// arm64's in dot_arm64.go, kquant_arm64.go, legacy_arm64.go and float_arm64.go).

func dotQ8_0(w, x []byte) float32            { return dotQ8_0Generic(w, x) }
func dotQ4_0(w, x []byte) float32            { return dotQ4_0Generic(w, x) }
func dotF32(row []byte, x []float32) float32 { return dotF32Generic(row, x) }
func dotF16(row []byte, x []uint16) float32  { return dotF16Generic(row, x) }

// DotF16 returns the dot product of two F16 vectors, accumulated in float32.
func DotF16(a, b []uint16) float32 { return dotU16Generic(a, b[:len(a)]) }

// AxpyF16 adds a times the F16 vector v to out.
func AxpyF16(out []float32, a float32, v []uint16) { axpyU16Generic(out, a, v[:len(out)]) }

func dot4x2(m *Matrix, i int, a, b *Vec, ya, yb []float32) bool { return false }

// packGroup: no interleaved kernels here (the NEON ones read rows in the file's layout).
func packGroup(t gguf.Type) int { return 0 }

func gemvAsm(m *Matrix, x *Vec, y []float32, g0, g1 int) bool { return false }

func gemmAsm(m *Matrix, xs []Vec, ys [][]float32, g0, g1 int) bool { return false }

func quantizeQ8_0(src []float32, dst []byte) { quantizeQ8_0Generic(src, dst) }

// F32ToF16s converts src to IEEE halves in dst (F32ToF16 of each).
func F32ToF16s(dst []uint16, src []float32) { f32ToF16sGeneric(dst, src) }

// ScaleRoundF16s sets each value v of x to a*v rounded to the nearest IEEE half
// (F16ToF32(F32ToF16(a*v))).
func ScaleRoundF16s(x []float32, a float32) { scaleRoundF16sGeneric(x, a) }

// DotF16Rows sets out[p] = DotF16(q, k[p*stride+off : p*stride+off+len(q)]) * scale for
// p < len(out) and returns their maximum (-Inf for none).
func DotF16Rows(out []float32, q, k []uint16, stride, off int, scale float32) float32 {
	return dotF16RowsGeneric(out, q, k, stride, off, scale)
}

// AxpyF16Rows adds w[p] times v[p*stride+off : p*stride+off+len(out)] to out for p < len(w),
// as AxpyF16 once per p in order.
func AxpyF16Rows(out, w []float32, v []uint16, stride, off int) {
	axpyF16RowsGeneric(out, w, v, stride, off)
}
