//go:build arm64 && !noasm

package quant

// Until the NEON kernels for the legacy types land, arm64 runs their Go dot functions.

func rowsQ4_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_0(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
func rowsQ5_1(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
