//go:build !noasm

package kern

import "golang.org/x/sys/cpu"

var (
	useAVX2 = cpu.X86.HasAVX2
	useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C
)

// HasAsm reports whether the assembly kernels are in use on this CPU.
func HasAsm() bool { return useAVX2 }

//go:noescape
func sumFloat32AVX2(in, inout *float32, n int)

//go:noescape
func sumFloat64AVX2(in, inout *float64, n int)

// sumFloat32Vec sums the longest prefix that is a multiple of 32 elements (four YMM
// registers) and returns its length; the caller finishes the tail.
func sumFloat32Vec(in, inout []float32) int {
	m := len(inout) &^ 31
	if !useAVX2 || m == 0 {
		return 0
	}
	sumFloat32AVX2(&in[0], &inout[0], m)
	return m
}

func sumFloat64Vec(in, inout []float64) int {
	m := len(inout) &^ 15
	if !useAVX2 || m == 0 {
		return 0
	}
	sumFloat64AVX2(&in[0], &inout[0], m)
	return m
}

//go:noescape
func sumF16F16C(in, inout *uint16, n int)

func sumF16Vec(in, inout []uint16) int {
	m := len(inout) &^ 15
	if !useF16C || m == 0 {
		return 0
	}
	sumF16F16C(&in[0], &inout[0], m)
	return m
}
