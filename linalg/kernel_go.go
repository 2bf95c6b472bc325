package linalg

import "unsafe"

// goKernel4x4 is the pure-Go micro-kernel (4×4 tile, 16 accumulators in
// registers), used under the noasm tag and on architectures without an
// assembly kernel.
func goKernel4x4(kc int, ap, bp, cp *float64, ldc int, alpha float64) {
	a := unsafe.Slice(ap, kc*4)
	b := unsafe.Slice(bp, kc*4)
	var c00, c10, c20, c30, c01, c11, c21, c31, c02, c12, c22, c32, c03, c13, c23, c33 float64
	for range kc {
		// Re-slicing as we go lets the compiler drop the bounds checks.
		av, bv := a[:4:4], b[:4:4]
		a, b = a[4:], b[4:]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c10 += a1 * b0
		c20 += a2 * b0
		c30 += a3 * b0
		c01 += a0 * b1
		c11 += a1 * b1
		c21 += a2 * b1
		c31 += a3 * b1
		c02 += a0 * b2
		c12 += a1 * b2
		c22 += a2 * b2
		c32 += a3 * b2
		c03 += a0 * b3
		c13 += a1 * b3
		c23 += a2 * b3
		c33 += a3 * b3
	}
	c := unsafe.Slice(cp, 3*ldc+4)
	c[0] += alpha * c00
	c[1] += alpha * c10
	c[2] += alpha * c20
	c[3] += alpha * c30
	c[ldc] += alpha * c01
	c[ldc+1] += alpha * c11
	c[ldc+2] += alpha * c21
	c[ldc+3] += alpha * c31
	c[2*ldc] += alpha * c02
	c[2*ldc+1] += alpha * c12
	c[2*ldc+2] += alpha * c22
	c[2*ldc+3] += alpha * c32
	c[3*ldc] += alpha * c03
	c[3*ldc+1] += alpha * c13
	c[3*ldc+2] += alpha * c23
	c[3*ldc+3] += alpha * c33
}

var goKernel = microKernel{name: "go4x4", mr: 4, nr: 4, fn: goKernel4x4, mc: 128, kc: 256, nc: 2048}
