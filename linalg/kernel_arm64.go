//go:build !noasm

package linalg

//go:noescape
func kernNEON(kc int, a, b, c *float64, ldc int, alpha float64)

var neonKernel = microKernel{name: "neon-8x6", mr: 8, nr: 6, fn: kernNEON, mc: 128, kc: 320, nc: 4092}

// availableKernels lists the kernels this CPU can run, best first. Every
// arm64 CPU has Advanced SIMD (NEON) with double precision.
func availableKernels() []microKernel { return []microKernel{neonKernel, goKernel} }
