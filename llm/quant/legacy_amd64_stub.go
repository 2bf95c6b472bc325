//go:build amd64 && !noasm

package quant

// Until the amd64 legacy kernels (legacy_amd64.go) are merged, the legacy types' products on
// amd64 are the Go dot functions, row by row. Delete this file when that file arrives.

func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
