//go:build !linux

package comm

import "golang.org/x/sys/unix"

func sockRead(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// sockWritev writes a then b (b may be empty) in one call.
func sockWritev(fd int, a, b []byte) (int, error) {
	if len(b) == 0 {
		return unix.Writev(fd, [][]byte{a})
	}
	return unix.Writev(fd, [][]byte{a, b})
}
