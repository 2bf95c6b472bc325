package linalg

import "testing"

// BenchmarkPackAPanel packs HPL's L panel (8000x192, lda 8000) into 24-row micro-panels the
// way gemmPacked's prepackA does: block of mc rows after block, with the panel out of cache
// (a 64 MiB sweep in between, untimed).
func BenchmarkPackAPanel(b *testing.B) {
	const m, k, mr, mc = 8000, 192, 24, 192
	a := make([]float64, m*k)
	for i := range a {
		a[i] = float64(i)
	}
	dst := make([]float64, roundUp(m, mr)*k)
	sweep := make([]float64, 8<<20)
	b.SetBytes(int64(m * k * 8))
	for b.Loop() {
		b.StopTimer()
		for i := range sweep {
			sweep[i]++
		}
		b.StartTimer()
		for ic := 0; ic < m; ic += mc {
			mcc := min(mc, m-ic)
			packA(false, mr, mcc, k, a, m, ic, 0, dst[ic*k:])
		}
	}
}
