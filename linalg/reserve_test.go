package linalg

import "testing"

// TestReserve: after Reserve, calls within the kernel's cache blocks pack into the buffers it
// readied instead of making new ones, and a call allocates at most its job (no per-call edge
// tile: a fresh heap page touched inside a timed solve is what Reserve is there to avoid).
func TestReserve(t *testing.T) {
	if !goBackend {
		t.Skip("the openblas backend keeps its own buffers")
	}
	defer SetThreads(SetThreads(1))
	Reserve()
	bufCache.Lock()
	if len(bufCache.free) == 0 {
		bufCache.Unlock()
		t.Fatal("Reserve left no buffers in the cache")
	}
	ready := bufCache.free[len(bufCache.free)-1]
	b0, a0 := &ready.b[:1][0], &ready.a[0][:1][0]
	bufCache.Unlock()

	m, n, k := 301, 203, min(150, kern.kc)
	a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
	tri := make([]float64, 192*192)
	for i := range 192 {
		tri[i+i*192] = 1
	}
	x := make([]float64, 192*400)
	pa := make([]float64, PackedALen(m, k))
	PackA(m, k, a, m, pa)
	for name, call := range map[string]func(){
		"Dgemm":        func() { Dgemm(NoTrans, NoTrans, m, n, k, 1, a, m, b, k, 1, c, m) },
		"Dtrsm":        func() { Dtrsm(Left, Lower, NoTrans, Unit, 192, 400, 1, tri, 192, x, 192) },
		"DgemmPackedA": func() { DgemmPackedA(NoTrans, m, n, k, 1, pa, b, k, 1, c, m) },
	} {
		if got := testing.AllocsPerRun(10, call); got > 1 {
			t.Errorf("%s: %v allocations per call, want at most 1", name, got)
		}
		bufCache.Lock()
		g := bufCache.free[len(bufCache.free)-1]
		same := &g.b[:1][0] == b0 && &g.a[0][:1][0] == a0
		bufCache.Unlock()
		if !same {
			t.Errorf("%s: packed into new buffers, not Reserve's", name)
		}
	}
}
