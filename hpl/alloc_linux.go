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
	base := unsafe.Pointer(unsafe.SliceData(a))
	start := uintptr(base)
	end := start + uintptr(len(a))*8
	lo, hi := (start+huge-1)&^(huge-1), end&^(huge-1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-start)), hi-lo), unix.MADV_HUGEPAGE)
}
