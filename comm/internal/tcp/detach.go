package tcp

import (
	"net"

	"golang.org/x/sys/unix"
)

// Detach returns a non-blocking duplicate of conn's descriptor and closes conn.
func Detach(conn *net.TCPConn) (int, error) {
	defer conn.Close()
	conn.SetNoDelay(true)
	if n := sendBuffer(); n > 0 {
		conn.SetWriteBuffer(n)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	// Close-on-exec from the start: a rank that starts programs must not hand them its links.
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
