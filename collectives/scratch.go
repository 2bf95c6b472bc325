package collectives

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm"
)

// Scratch buffers are kept per power-of-two size class and reused across calls: a page fault per
// fresh page is far dearer than the copy itself, so a collective that allocated its
// temporaries per call would run at page-fault speed.
type scratchPool struct {
	mu   sync.Mutex
	free [64][][]uint64
}

const scratchKeep = 4 // buffers kept per size class

var pool scratchPool

// scratch is a borrowed buffer; release returns it to the pool.
type scratch struct{ words []uint64 }

func getScratch(nbytes int) scratch {
	if nbytes <= 0 {
		return scratch{}
	}
	class := bits.Len(uint(nbytes-1)) + 0 // capacity 1<<class >= nbytes
	class = max(class, 6)
	pool.mu.Lock()
	if l := pool.free[class]; len(l) > 0 {
		w := l[len(l)-1]
		pool.free[class] = l[:len(l)-1]
		pool.mu.Unlock()
		return scratch{w}
	}
	pool.mu.Unlock()
	return scratch{make([]uint64, (1<<class)/8)}
}

func (s scratch) release() {
	if s.words == nil {
		return
	}
	class := bits.Len(uint(len(s.words)*8 - 1))
	pool.mu.Lock()
	if len(pool.free[class]) < scratchKeep {
		pool.free[class] = append(pool.free[class], s.words)
	}
	pool.mu.Unlock()
}

func (s scratch) bytes(n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s.words[0])), len(s.words)*8)[:n]
}

// scratchOf borrows a buffer of n elements of T (8-byte aligned).
func scratchOf[T comm.Elem](n int) ([]T, scratch) {
	var zero T
	sz := int(unsafe.Sizeof(zero))
	s := getScratch(n * sz)
	if n == 0 {
		return nil, s
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&s.words[0])), n), s
}

func elemSize[T comm.Elem]() int {
	var zero T
	return int(unsafe.Sizeof(zero))
}

// sameSlice reports whether a and b are the same memory (an explicit in-place call).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// partition splits n elements into p blocks whose sizes are multiples of unit and differ by at
// most one unit; block i is [off[i], off[i+1]). off must have length p+1.
func partition(n, p, unit int, off []int) {
	units := n / unit
	base, rem := units/p, units%p
	off[0] = 0
	for i := 0; i < p; i++ {
		c := base
		if i < rem {
			c++
		}
		off[i+1] = off[i] + c*unit
	}
}

// offsets borrows an int slice of length p+1 for partitions (small; p is a rank count).
func offsets(p int) []int { return make([]int, p+1) }

// foldRanks describes the standard reduction of a non-power-of-two group to pof2 participants:
// the first 2*rem ranks pair up (even into odd), the rest shift down by rem.
type fold struct {
	p, pof2, rem int
}

func newFold(p int) fold {
	pof2 := 1 << (bits.Len(uint(p)) - 1)
	return fold{p: p, pof2: pof2, rem: p - pof2}
}

// newRank is r's index among the pof2 participants, or -1 for an even rank folded into r+1.
func (f fold) newRank(r int) int {
	switch {
	case r >= 2*f.rem:
		return r - f.rem
	case r%2 == 1:
		return r / 2
	}
	return -1
}

// real maps a participant index back to its rank.
func (f fold) real(nr int) int {
	if nr < f.rem {
		return 2*nr + 1
	}
	return nr + f.rem
}
