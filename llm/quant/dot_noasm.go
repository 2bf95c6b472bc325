//go:build (!amd64 && !arm64) || noasm

package quant

import "github.com/gorun-hpc/gorun/llm/gguf"

// kernelISA: every kernel is pure Go here.
func kernelISA(t gguf.Type) string { return "" }

// Kernel names the dot-product implementation in use.
func Kernel() string { return "go" }

func dot4(m *Matrix, i int, v *Vec, y []float32) bool { return false }

func dotQ4_0Vec(w []byte, v *Vec) float32 { return dotQ4_0Generic(w, v.Q8) }

func dotQ8_0Vec(w []byte, v *Vec) float32 { return dotQ8_0Generic(w, v.Q8) }

func matVecRows(m *Matrix, v *Vec, y []float32, lo, hi int) bool { return false }
