package linalg

// The assembly kernels are generated; _gen is a separate module so that the
// generator never enters the main go.mod.
//go:generate sh -c "cd _gen && go run . -out .."

// microKernel describes one register-blocked micro-kernel: fn computes
// C += alpha*A*B for an mr×nr tile of column-major C with leading dimension ldc,
// where a points to a packed mr×kc micro-panel (mr consecutive elements per k
// step) and b to a packed kc×nr micro-panel (nr consecutive elements per k
// step). fn reads exactly kc*mr elements of A and kc*nr of B and touches only
// the tile.
type microKernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c *float64, ldc int, alpha float64)
	// Cache blocking for this kernel (see blocking.go).
	mc, kc, nc int
	// thin[w], where present, computes an mr×w tile (w = 1..nr) reading A
	// unpacked (lda elements per k step) and B from a packed panel of
	// width nr: the kernels of gemmThin.
	thin []stridedKernel
	// multi, where present, is fn over tiles consecutive mr-row tiles of a
	// column of C (packed A tiles back to back, the same B panel): the
	// macro-kernel's inner loop in one call.
	multi func(kc int, a, b, c *float64, ldc int, alpha float64, tiles int)
}

// stridedKernel is a micro-kernel for C += alpha*A*B on an mr×w tile with A
// read in place from column-major storage.
type stridedKernel func(kc int, a *float64, lda int, b, c *float64, ldc int, alpha float64)

// kern is the micro-kernel Dgemm uses, chosen at init by CPU features.
var kern microKernel

// goKernelRef is the portable reference micro-kernel for any tile shape:
// the test oracle for the assembly kernels.
func goKernelRef(mr, nr, kc int, a, b, c []float64, ldc int, alpha float64) {
	for j := range nr {
		for i := range mr {
			var s float64
			for l := range kc {
				s += a[l*mr+i] * b[l*nr+j]
			}
			c[i+j*ldc] += alpha * s
		}
	}
}
