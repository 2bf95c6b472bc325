//go:build (!amd64 && !arm64) || noasm

package quant

// Without the assembly the legacy types' products are the Go dot functions, row by row.

func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
