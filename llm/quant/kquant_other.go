//go:build !amd64 || noasm

package quant

// Without the assembly the K-quant dot products are the Go twins, row by row.

func dotQ4_KVec(row []byte, v *Vec) float32 { return dotQ4_K(row, v) }
func dotQ5_KVec(row []byte, v *Vec) float32 { return dotQ5_K(row, v) }
func dotQ6_KVec(row []byte, v *Vec) float32 { return dotQ6_K(row, v) }

func quantizeQ8_K(x []float32, y []BlockQ8K) { quantizeQ8_KGeneric(x, y) }

func rowsQ4_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ6_K(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
