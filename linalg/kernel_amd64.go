//go:build !noasm

package linalg

import "golang.org/x/sys/cpu"

//go:noescape
func kernAVX512(kc int, a, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2(kc int, a, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2m(kc int, a, b, c *float64, ldc int, alpha float64, tiles int)

//go:noescape
func kernAVX2s1(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2s2(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2s3(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2s4(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2s5(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func kernAVX2s6(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

//go:noescape
func packA8AVX(n int, src, dst *float64, stride int)

//go:noescape
func packB6AVX(k4 int, b *float64, ldb int, d *float64)

//go:noescape
func axpyAVX(n int, alpha float64, x, y *float64)

//go:noescape
func scalAVX(n int, alpha float64, x *float64)

//go:noescape
func packA24AVX512(n int, src, dst *float64, stride int)

//go:noescape
func maxAbsAVX(n int, x *float64) float64

//go:noescape
func findAbsAVX(n int, x *float64, v float64) int

func init() {
	if cpu.X86.HasAVX {
		packA8, packB6 = packA8AVX, packB6AVX
	}
	if cpu.X86.HasAVX512F {
		packA24 = packA24AVX512
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		axpyAsm, scalAsm, maxAbsAsm, findAbsAsm = axpyAVX, scalAVX, maxAbsAVX, findAbsAVX
	}
}

// The B blocks are about 1000 columns wide: a pass of an A block then touches C on ~50
// huge pages rather than ~200 (ldc of several thousand), and the packed block (3 MiB at kc
// 384) leaves room in the shared L3 for a second rank's. HPL ran faster with nc about 1000
// than with 4096 on both kernels (bench/results/history-hpl.md); which of the two effects
// counts most is not known.
var (
	avx512Kernel = microKernel{name: "avx512-24x8", mr: 24, nr: 8, fn: kernAVX512, mc: 192, kc: 384, nc: 1024}
	avx2Kernel   = microKernel{name: "avx2-8x6", mr: 8, nr: 6, fn: kernAVX2, multi: kernAVX2m, mc: 96, kc: 256, nc: 1020,
		thin: []stridedKernel{nil, kernAVX2s1, kernAVX2s2, kernAVX2s3, kernAVX2s4, kernAVX2s5, kernAVX2s6}}
)

// availableKernels lists the kernels this CPU can run, best first.
func availableKernels() []microKernel {
	var ks []microKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, goKernel)
}
