//go:build !linux

package linalg

// allocBuf returns a zeroed buffer of n float64s for packing.
func allocBuf(n int) []float64 { return make([]float64, n) }
