//go:build noasm || !(amd64 || arm64)

package linalg

// availableKernels: only the pure-Go kernel under the noasm tag or on
// architectures without an assembly kernel.
func availableKernels() []microKernel { return []microKernel{goKernel} }
