//go:build amd64 && !noasm

package quant

func dotQ8_0(w, x []byte) float32 { return dotQ8_0Generic(w, x) }
func dotQ4_0(w, x []byte) float32 { return dotQ4_0Generic(w, x) }

// Kernel names the dot-product implementation in use.
func Kernel() string { return "go" }
