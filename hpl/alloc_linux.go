//go:build linux

package hpl

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel for transparent huge pages under the whole 2 MiB pages of a
// (advisory; the machine may refuse, and then nothing changes). The matrix is walked column
// by column with a stride of LD doubles, and the row swaps touch rows scattered over every
// column: with 4 KiB pages nearly every such access misses the TLB.
func adviseHuge(a []float64) {
	const huge = 2 << 20
	if len(a)*8 < 2*huge {
		return
	}
	madviseWhole(a, huge, unix.MADV_HUGEPAGE)
}

// prefault maps in the pages under a with one system call (MADV_POPULATE_WRITE, Linux 5.14;
// older kernels refuse it and nothing changes) instead of a page fault per page at first
// touch. The contents stay as they are. A fault on memory the process never touched is dear
// on a VM (the host may back the page only then), and the first panels' copies would take
// those faults inside the timed region.
func prefault(a []float64) {
	madviseWhole(a, 4096, unix.MADV_POPULATE_WRITE)
}

// madviseWhole applies advice to the whole pages (of size page) inside a; errors are ignored,
// the advice being an optimization.
func madviseWhole(a []float64, page uintptr, advice int) {
	base := unsafe.Pointer(unsafe.SliceData(a))
	start := uintptr(base)
	end := start + uintptr(len(a))*8
	lo, hi := (start+page-1)&^(page-1), end&^(page-1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-start)), hi-lo), advice)
}
