//go:build noasm || !amd64

package kern

// HasAsm reports whether the assembly kernels are in use on this CPU.
func HasAsm() bool { return false }

func sumFloat32Vec(in, inout []float32) int { return 0 }
func sumFloat64Vec(in, inout []float64) int { return 0 }
func sumF16Vec(in, inout []uint16) int      { return 0 }
