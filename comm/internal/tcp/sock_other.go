//go:build !linux

package tcp

import "golang.org/x/sys/unix"

// Read reads from the non-blocking socket fd into b.
func Read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// Writev writes a then b (b may be empty) in one call.
func Writev(fd int, a, b []byte) (int, error) {
	if len(b) == 0 {
		return unix.Writev(fd, [][]byte{a})
	}
	return unix.Writev(fd, [][]byte{a, b})
}

// sendBuffer is 0: the kernel's default send buffer is kept.
func sendBuffer() int { return 0 }
