//go:build linux

package linalg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocBuf returns a zeroed buffer of n float64s for packing. Large ones
// are mapped directly and marked for transparent huge pages, so that the
// micro-kernels' streams through packed panels need few TLB entries. The
// buffers are cached for the life of the process (see bufCache), so they
// are never unmapped.
func allocBuf(n int) []float64 {
	const huge = 2 << 20
	size := n * 8
	if size < huge {
		return make([]float64, n)
	}
	size = (size + huge - 1) / huge * huge
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]float64, n)
	}
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE) // advisory: fine if refused
	return unsafe.Slice((*float64)(unsafe.Pointer(&mem[0])), size/8)[:n]
}
