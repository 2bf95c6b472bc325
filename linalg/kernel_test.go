package linalg

import (
	"fmt"
	"testing"
)

// kernelCheck runs kn on panels filled from data and compares the tile with
// goKernelRef. The values are small multiples of 1/16, so every product and
// sum is exact in float64 and the comparison can be exact whatever the
// order of operations or the use of FMA.
func kernelCheck(t *testing.T, kn microKernel, kc, ldcPad int, data []byte) {
	t.Helper()
	mr, nr := kn.mr, kn.nr
	ldc := mr + ldcPad
	val := func(i int) float64 {
		if len(data) == 0 {
			return float64(i%7) - 3
		}
		return float64(int8(data[i%len(data)]^byte(i*31))) / 16
	}
	a := make([]float64, mr*kc)
	b := make([]float64, nr*kc)
	for i := range a {
		a[i] = val(i)
	}
	for i := range b {
		b[i] = val(len(a) + i)
	}
	c := make([]float64, ldc*nr+1)
	for i := range c {
		c[i] = pad
	}
	for j := range nr {
		for i := range mr {
			c[i+j*ldc] = val(3*i + 5*j)
		}
	}
	want := append([]float64(nil), c...)
	// alpha is a power of two (or zero), so scaling stays exact.
	alpha := []float64{1, -1, 0.5, -2, 0}[kc%5]
	goKernelRef(mr, nr, kc, a, b, want, ldc, alpha)
	kn.fn(kc, &a[0], &b[0], &c[0], ldc, alpha)
	checkPad(t, fmt.Sprintf("%s kc=%d ldc=%d", kn.name, kc, ldc), c, mr, nr, ldc)
	for j := range nr {
		for i := range mr {
			if got, w := c[i+j*ldc], want[i+j*ldc]; got != w {
				t.Fatalf("%s kc=%d ldc=%d: C[%d,%d] = %v, reference %v", kn.name, kc, ldc, i, j, got, w)
			}
		}
	}
}

// TestKernels checks every micro-kernel this CPU can run (assembly and
// pure Go) against the reference kernel for k values around the unrolling.
func TestKernels(t *testing.T) {
	for _, kn := range availableKernels() {
		for kc := 1; kc <= 20; kc++ {
			kernelCheck(t, kn, kc, kc%3, []byte{byte(kc), 7, 200, 13})
		}
		kernelCheck(t, kn, 385, 1, nil)
	}
}

// FuzzKernel compares each available micro-kernel with the pure-Go
// reference on fuzzed panel contents, depths and leading dimensions.
func FuzzKernel(f *testing.F) {
	f.Add(uint16(1), uint8(0), []byte{1})
	f.Add(uint16(7), uint8(2), []byte{255, 0, 128, 3})
	f.Fuzz(func(t *testing.T, kc uint16, ldcPad uint8, data []byte) {
		k := 1 + int(kc)%600
		for _, kn := range availableKernels() {
			kernelCheck(t, kn, k, int(ldcPad%16), data)
		}
	})
}

// TestThinKernels checks each strided kernel (A read in place, tile width
// 1..nr) against the reference, with A's leading dimension padded, for k
// values around the unrolling; values are exact as in kernelCheck.
func TestThinKernels(t *testing.T) {
	for _, kn := range availableKernels() {
		if kn.thin == nil {
			continue
		}
		mr, nr := kn.mr, kn.nr
		for w := 1; w <= nr; w++ {
			for kc := 1; kc <= 13; kc++ {
				lda, ldc := mr+kc%4, mr+kc%3
				val := func(i int) float64 { return float64((i*37+kc)%15-7) / 4 }
				a := make([]float64, lda*kc)
				for i := range a {
					a[i] = val(i)
				}
				b := make([]float64, nr*kc) // packed, width nr; columns >= w ignored
				for i := range b {
					b[i] = val(1000 + i)
				}
				c := make([]float64, ldc*w)
				for i := range c {
					c[i] = pad
				}
				for j := range w {
					for i := range mr {
						c[i+j*ldc] = val(3*i + 5*j)
					}
				}
				want := append([]float64(nil), c...)
				alpha := []float64{1, -1, 0.5, -2}[kc%4]
				for j := range w {
					for i := range mr {
						s := 0.0
						for l := range kc {
							s += a[i+l*lda] * b[l*nr+j]
						}
						want[i+j*ldc] += alpha * s
					}
				}
				kn.thin[w](kc, &a[0], lda, &b[0], &c[0], ldc, alpha)
				name := fmt.Sprintf("%s thin width %d kc=%d lda=%d ldc=%d", kn.name, w, kc, lda, ldc)
				checkPad(t, name, c, mr, w, ldc)
				for i := range c {
					if c[i] != want[i] && !(c[i] != c[i] && want[i] != want[i]) {
						t.Fatalf("%s: C[%d] = %v, reference %v", name, i, c[i], want[i])
					}
				}
			}
		}
	}
}
