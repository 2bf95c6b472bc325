//go:build (!amd64 && !arm64) || noasm

package quant

// Without the assembly the K-quant and IQ4 dot products are the Go twins, row by row.

func dotQ2_KVec(row []byte, v *Vec) float32   { return dotQ2_K(row, v) }
func dotQ3_KVec(row []byte, v *Vec) float32   { return dotQ3_K(row, v) }
func dotQ4_KVec(row []byte, v *Vec) float32   { return dotQ4_K(row, v) }
func dotQ5_KVec(row []byte, v *Vec) float32   { return dotQ5_K(row, v) }
func dotQ6_KVec(row []byte, v *Vec) float32   { return dotQ6_K(row, v) }
func dotIQ4_XSVec(row []byte, v *Vec) float32 { return dotIQ4_XS(row, v) }
func dotIQ4_NLVec(row []byte, v *Vec) float32 { return dotIQ4_NL(row, v) }

func quantizeQ8_K(x []float32, y []BlockQ8K) { quantizeQ8_KGeneric(x, y) }

func rowsQ2_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool   { return false }
func rowsQ3_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool   { return false }
func rowsQ4_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool   { return false }
func rowsQ5_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool   { return false }
func rowsQ6_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool   { return false }
func rowsIQ4_XS(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }

func kRowsN(m *Matrix, xs []Vec, ys [][]float32, lo, hi int) int { return 0 }

func kRows2(m *Matrix, a, b *Vec, ya, yb []float32, lo, hi int) bool { return false }
