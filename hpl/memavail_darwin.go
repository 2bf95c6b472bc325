//go:build darwin

package hpl

import "golang.org/x/sys/unix"

// osAvailableMemory is the machine's physical memory (hw.memsize): macOS compresses and swaps
// rather than refusing memory, so more than there is, not more than is free, is what cannot
// be had.
func osAvailableMemory() (uint64, bool) {
	v, err := unix.SysctlUint64("hw.memsize")
	return v, err == nil && v > 0
}
