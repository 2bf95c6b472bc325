//go:build !amd64 || noasm

package quant

func dotQ8_0(w, x []byte) float32            { return dotQ8_0Generic(w, x) }
func dotQ4_0(w, x []byte) float32            { return dotQ4_0Generic(w, x) }
func dotF32(row []byte, x []float32) float32 { return dotF32Generic(row, x) }
func dotF16(row []byte, x []uint16) float32  { return dotF16Generic(row, x) }

// Kernel names the dot-product implementation in use.
func Kernel() string { return "go" }
