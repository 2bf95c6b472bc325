package linalg

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// threadLimit caps the goroutines one Dgemm call uses; 0 means GOMAXPROCS.
var threadLimit atomic.Int64

// SetThreads sets the number of goroutines a single Dgemm (and so Dtrsm and
// Dgetrf) call may use and returns the previous setting. n <= 0 means
// runtime.GOMAXPROCS(0), the default. Programs that already run one
// goroutine per core, each calling into linalg (HPL with one rank per core),
// should set 1, as they would set OPENBLAS_NUM_THREADS=1.
func SetThreads(n int) int {
	backendSetThreads(n)
	return int(threadLimit.Swap(int64(max(n, 0))))
}

func maxThreads() int {
	if n := int(threadLimit.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// Below these sizes packing costs more than it saves, and a second
// goroutine costs more than it saves.
const (
	simpleFlops   = 16 * 16 * 16
	parallelFlops = 1 << 20 // multiply-adds
)

// gemm is Dgemm after argument checks and quick returns: m, n, k > 0 and
// alpha != 0. It uses up to th goroutines.
func gemm(th int, transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m*n*k <= simpleFlops || m == 1 || n == 1 {
		gemmSimple(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	scaleC(m, n, beta, c, ldc)
	threads := 1
	if m*n*k >= parallelFlops {
		threads = th
	}
	if threads == 1 && !transA && m >= kern.mr && k <= thinMaxK && k*n <= thinMaxB && kern.thin != nil {
		gemmThin(kern, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	gemmPacked(kern, threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
}

// gemmThin is used up to these sizes: k at most thinMaxK and op(B) at most
// thinMaxB elements (packed B stays in L2). There A's elements are used for
// too few multiply-adds to repay packing them. Beyond, packing wins, as it
// runs in assembly and A is packed once: read in place, the strip's k
// columns lie far apart in a tall matrix, k cache misses the prefetchers
// cannot predict. Both limits were chosen by timing HPL's panel
// factorization (commit 7dc4595).
const (
	thinMaxK = 16
	thinMaxB = 32 << 10
)

// gemmThin computes C += alpha*A*op(B) for a small k (LU's panel
// factorization: thousands of rows, a few to a few dozen columns) with the
// kernel's strided variants: A is read where it lies, op(B) (k×n, small) is
// packed once, and each mr-row strip of A is used against every panel of B
// while it is in L1. Rows past the last full strip go through gemmSimple.
func gemmThin(kn microKernel, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	mr, nr := kn.mr, kn.nr
	npanels := (n + nr - 1) / nr
	bufs := getBufs(1, 0, k*npanels*nr)
	bp := bufs.b
	packB(transB, nr, k, n, b, ldb, 0, 0, 0, npanels, bp)
	mFull := m / mr * mr
	for i := 0; i < mFull; i += mr {
		_ = a[i+mr-1+(k-1)*lda] // bounds check before the kernel reads
		for p := range npanels {
			j := p * nr
			w := min(nr, n-j)
			_ = c[i+mr-1+(j+w-1)*ldc]
			kn.thin[w](k, &a[i], lda, &bp[p*k*nr], &c[i+j*ldc], ldc, alpha)
		}
	}
	putBufs(bufs)
	if mFull < m {
		gemmSimple(false, transB, m-mFull, n, k, alpha, a[mFull:], lda, b, ldb, 1, c[mFull:], ldc)
	}
}

func roundUp(x, q int) int { return (x + q - 1) / q * q }

// prepackMaxA bounds the packed copy of all of A (elements) that one
// worker keeps across column blocks: 32 MiB.
const prepackMaxA = 4 << 20

// gemmBufs holds the packing buffers of one gemm call. They are large
// (megabytes) and the first touch of fresh pages is slow, so they are kept
// for reuse instead of being left to the garbage collector.
type gemmBufs struct {
	b   []float64   // packed kc×nc block of op(B), shared by the workers
	a   [][]float64 // packed mc×kc block of op(A), one per worker
	tmp []*edgeTile // one per worker
}

// edgeTile holds a partial tile of C for the full-size kernel: the largest kernel tile is
// 24×8. It lives with the buffers because the kernels, called through function values, make
// a local array escape to the heap: an allocation per call.
type edgeTile [32 * 32]float64

var bufCache struct {
	sync.Mutex
	free []*gemmBufs
}

// maxCachedBufs bounds the number of idle buffer sets kept; more are only
// needed when many goroutines call Dgemm at once.
const maxCachedBufs = 16

// blockALen and blockBLen are the packed A and B blocks of the kernel's cache blocking, the
// largest that a call packs (but for the whole of A with prepackA): buffers are made at
// least this large so that they are made once, not again each time a call needs more.
func blockALen() int { return kern.mc * kern.kc }
func blockBLen() int { return kern.kc * roundUp(kern.nc, kern.nr) }

func getBufs(threads, aLen, bLen int) *gemmBufs {
	bufCache.Lock()
	var g *gemmBufs
	if n := len(bufCache.free); n > 0 {
		g = bufCache.free[n-1]
		bufCache.free = bufCache.free[:n-1]
	}
	bufCache.Unlock()
	if g == nil {
		g = new(gemmBufs)
	}
	if cap(g.b) < bLen {
		g.b = allocBuf(max(bLen, blockBLen()))
	}
	g.b = g.b[:bLen]
	for len(g.a) < threads {
		g.a = append(g.a, nil)
	}
	for len(g.tmp) < threads {
		g.tmp = append(g.tmp, new(edgeTile))
	}
	for w := range threads {
		if cap(g.a[w]) < aLen {
			g.a[w] = allocBuf(max(aLen, blockALen()))
		}
		g.a[w] = g.a[w][:aLen]
	}
	return g
}

// Reserve readies the packing buffers of a Dgemm or Dtrsm call with as many goroutines as
// SetThreads allows (any call but one packing all of a tall A at once), their pages touched,
// so that the first calls after it do not pay for fresh memory: the first touch of a page
// faults, and on a VM the host may back the page only then. HPL calls it before it starts its
// clock.
func Reserve() {
	if !goBackend {
		return // OpenBLAS keeps its own buffers
	}
	g := getBufs(maxThreads(), blockALen(), blockBLen())
	touch(g.b)
	for _, a := range g.a {
		touch(a)
	}
	putBufs(g)
}

// ReservedBytes is about how much memory Reserve readies with the current thread limit (the
// packing buffers and edge tiles; a buffer rounded up to whole huge pages counts as its
// length), 0 with a backend that keeps its own. HPL counts it in a test's memory need.
func ReservedBytes() int {
	if !goBackend {
		return 0
	}
	t := maxThreads()
	return 8*(t*blockALen()+blockBLen()) + t*int(unsafe.Sizeof(edgeTile{}))
}

// touch writes to every page of b.
func touch(b []float64) {
	b = b[:cap(b)]
	for i := 0; i < len(b); i += 512 {
		b[i] = 0
	}
}

func putBufs(g *gemmBufs) {
	bufCache.Lock()
	if len(bufCache.free) < maxCachedBufs {
		bufCache.free = append(bufCache.free, g)
	}
	bufCache.Unlock()
}

// gemmJob is one packed gemm call shared by its workers.
type gemmJob struct {
	kn             microKernel
	transA, transB bool
	m, n, k        int
	alpha          float64
	a              []float64
	lda            int
	b              []float64
	ldb            int
	c              []float64
	ldc            int
	kcB, mcB, ncB  int // block sizes for this call
	threads        int
	splitM         bool      // tasks are row blocks of C (else column chunks of each B block)
	prepackA       bool      // one worker, one k block: all of A is packed once, on the first column block
	packedA        []float64 // A packed by PackA (one k block), used in place: nothing to pack
	mPanels        int       // row micro-panels of C
	mBlocks        int       // row blocks (tasks) when splitM: a multiple of threads
	bufs           *gemmBufs
	bar            barrier
	// Work is handed out dynamically, so that a worker whose core is busy
	// with another process does not hold the others back at the barrier.
	packNext, compNext atomic.Int64
}

// gemmPacked computes C += alpha*op(A)*op(B) BLIS-style: for each kc×nc block
// of op(B) (packed once, shared by all workers) and each mc×kc block of op(A)
// (packed by the worker that uses it), the micro-kernel sweeps the mc×nc
// block of C tile by tile.
func gemmPacked(kn microKernel, threads int, transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	j := &gemmJob{kn: kn, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc}
	j.run(threads)
}

// gemmPackedA is gemmPacked with A already packed by PackA (k within one block).
func gemmPackedA(kn microKernel, threads int, transB bool, m, n, k int, alpha float64, pa []float64, b []float64, ldb int, c []float64, ldc int) {
	j := &gemmJob{kn: kn, transB: transB, m: m, n: n, k: k, alpha: alpha,
		packedA: pa, b: b, ldb: ldb, c: c, ldc: ldc}
	j.run(threads)
}

// run blocks the job and does it with up to threads goroutines.
func (j *gemmJob) run(threads int) {
	kn, m, n, k := j.kn, j.m, j.n, j.k
	mr, nr := kn.mr, kn.nr
	j.kcB = min(kn.kc, k)
	j.ncB = min(kn.nc, roundUp(n, nr))
	j.mcB = min(kn.mc, roundUp(m, mr))
	// Balance the k blocks so that the last one is not a sliver.
	if nb := (k + j.kcB - 1) / j.kcB; nb > 1 {
		j.kcB = (k + nb - 1) / nb
	}
	threads = max(1, min(threads, (m+mr-1)/mr*((n+nr-1)/nr)))
	j.threads = threads
	// Split the rows when there are enough row blocks to go round;
	// otherwise split the columns of the packed B block.
	j.splitM = (m+j.mcB-1)/j.mcB >= 2*threads || n < threads*nr*2
	// Equal row blocks, as many as a multiple of the workers, so that the
	// last round of blocks does not leave workers idle.
	j.mPanels = (m + mr - 1) / mr
	j.mBlocks = roundUp((m+j.mcB-1)/j.mcB, threads)
	aLen := j.mcB * j.kcB
	// One worker, k within one block and several column blocks (HPL's
	// update: thousands of rows and columns, k = NB): pack all of A once
	// instead of once per column block. Packing reads A from memory at a
	// stride of lda, so repacking it cost more than the copies suggest.
	if threads == 1 && k <= j.kcB && n > j.ncB && roundUp(m, mr)*j.kcB <= prepackMaxA {
		j.prepackA = true
		aLen = roundUp(m, mr) * j.kcB
	}
	if j.packedA != nil {
		aLen = 0 // k <= kc: one block, and the micro-panels are read where they lie
	}
	j.bufs = getBufs(threads, aLen, j.kcB*roundUp(j.ncB, nr))
	if threads == 1 {
		j.work(0)
	} else {
		j.bar.init(threads)
		var wg sync.WaitGroup
		for w := 1; w < threads; w++ {
			wg.Go(func() { j.work(w) })
		}
		j.work(0)
		wg.Wait()
	}
	putBufs(j.bufs)
}

// work is worker w's part of the loops of gemmPacked.
func (j *gemmJob) work(w int) {
	nr := j.kn.nr
	abuf := j.bufs.a[w]
	bbuf := j.bufs.b
	tmp := j.bufs.tmp[w]
	for jc := 0; jc < j.n; jc += j.ncB {
		nc := min(j.ncB, j.n-jc)
		npanels := (nc + nr - 1) / nr
		for pc := 0; pc < j.k; pc += j.kcB {
			kc := min(j.kcB, j.k-pc)
			if j.threads == 1 {
				packB(j.transB, nr, kc, nc, j.b, j.ldb, pc, jc, 0, npanels, bbuf)
				for ic := 0; ic < j.m; ic += j.mcB {
					mc := min(j.mcB, j.m-ic)
					ap := j.aBlock(abuf, ic, mc, kc)
					if j.packedA == nil && (!j.prepackA || jc == 0) {
						packA(j.transA, j.kn.mr, mc, kc, j.a, j.lda, ic, pc, ap)
					}
					macroKernel(j.kn, mc, nc, kc, j.alpha, ap, bbuf, j.c, j.ldc, ic, jc, 0, npanels, tmp)
				}
				continue
			}
			// Pack the B block in chunks of panels, shared out dynamically.
			chunk := max(1, npanels/(4*j.threads))
			for {
				lo := int(j.packNext.Add(int64(chunk))) - chunk
				if lo >= npanels {
					break
				}
				packB(j.transB, nr, kc, nc, j.b, j.ldb, pc, jc, lo, min(lo+chunk, npanels), bbuf)
			}
			j.bar.wait(func() { j.packNext.Store(0) })
			if j.splitM {
				for {
					i := int(j.compNext.Add(1)) - 1
					if i >= j.mBlocks {
						break
					}
					// Block i: micro-panels [P*i/nb, P*(i+1)/nb), at most mcB rows.
					p0, p1 := j.mPanels*i/j.mBlocks, j.mPanels*(i+1)/j.mBlocks
					ic := p0 * j.kn.mr
					mc := min(p1*j.kn.mr, j.m) - ic
					ap := j.aBlock(abuf, ic, mc, kc)
					if j.packedA == nil {
						packA(j.transA, j.kn.mr, mc, kc, j.a, j.lda, ic, pc, ap)
					}
					macroKernel(j.kn, mc, nc, kc, j.alpha, ap, bbuf, j.c, j.ldc, ic, jc, 0, npanels, tmp)
				}
			} else {
				// Few rows: every task packs the (small) A block itself.
				for {
					lo := int(j.compNext.Add(int64(chunk))) - chunk
					if lo >= npanels {
						break
					}
					hi := min(lo+chunk, npanels)
					for ic := 0; ic < j.m; ic += j.mcB {
						mc := min(j.mcB, j.m-ic)
						ap := j.aBlock(abuf, ic, mc, kc)
						if j.packedA == nil {
							packA(j.transA, j.kn.mr, mc, kc, j.a, j.lda, ic, pc, ap)
						}
						macroKernel(j.kn, mc, nc, kc, j.alpha, ap, bbuf, j.c, j.ldc, ic, jc, lo, hi, tmp)
					}
				}
			}
			// B is overwritten by the next block: wait for every worker.
			j.bar.wait(func() { j.compNext.Store(0) })
		}
	}
}

// aBlock is where the packed rows [ic, ic+mc) of A lie (ic a multiple of mr): in the caller's
// packed A, in the whole-A buffer of prepackA, or else at the start of the worker's buffer,
// which holds one block.
func (j *gemmJob) aBlock(abuf []float64, ic, mc, kc int) []float64 {
	end := (ic + roundUp(mc, j.kn.mr)) * kc
	switch {
	case j.packedA != nil:
		return j.packedA[ic*kc : end]
	case j.prepackA:
		return abuf[ic*kc : end]
	}
	return abuf[:end-ic*kc]
}

// macroKernel runs the micro-kernel over the mc×nc block of C at (ic, jc),
// for the B micro-panels [plo, phi). Each B micro-panel stays in L1 while
// the A block streams from L2.
func macroKernel(kn microKernel, mc, nc, kc int, alpha float64, ap, bp, c []float64, ldc, ic, jc, plo, phi int, tmp *edgeTile) {
	mr, nr := kn.mr, kn.nr
	fn := kn.fn
	for jp := plo; jp < phi; jp++ {
		jj := jp * nr
		nrEff := min(nr, nc-jj)
		bpan := bp[jp*kc*nr : (jp+1)*kc*nr]
		ii := 0
		if full := mc / mr; kn.multi != nil && nrEff == nr && full > 0 {
			off := ic + (jc+jj)*ldc
			col := c[off : off+(nr-1)*ldc+full*mr] // bounds checks before the kernel
			_ = ap[full*mr*kc-1]
			kn.multi(kc, &ap[0], &bpan[0], &col[0], ldc, alpha, full)
			ii = full * mr
		}
		for ; ii < mc; ii += mr {
			mrEff := min(mr, mc-ii)
			apan := ap[ii*kc : ii*kc+mr*kc]
			off := ic + ii + (jc+jj)*ldc
			if mrEff == mr && nrEff == nr {
				tile := c[off : off+(nr-1)*ldc+mr] // bounds check before the kernel writes
				fn(kc, &apan[0], &bpan[0], &tile[0], ldc, alpha)
				continue
			}
			t := tmp[:mr*nr]
			clear(t)
			fn(kc, &apan[0], &bpan[0], &t[0], mr, alpha)
			for x := range nrEff {
				cc := c[off+x*ldc : off+x*ldc+mrEff]
				tt := t[x*mr : x*mr+mrEff]
				for y := range cc {
					cc[y] += tt[y]
				}
			}
		}
	}
}

// barrier is a reusable rendezvous for a fixed number of goroutines.
type barrier struct {
	mu    sync.Mutex
	cond  sync.Cond
	n     int
	count int
	gen   uint64
}

func (b *barrier) init(n int) {
	b.n = n
	b.cond.L = &b.mu
}

// wait blocks until all n goroutines have called it; the last to arrive
// runs last (if not nil) before any of them returns.
func (b *barrier) wait(last func()) {
	b.mu.Lock()
	gen := b.gen
	b.count++
	if b.count == b.n {
		if last != nil {
			last()
		}
		b.count = 0
		b.gen++
		b.cond.Broadcast()
	} else {
		for gen == b.gen {
			b.cond.Wait()
		}
	}
	b.mu.Unlock()
}
