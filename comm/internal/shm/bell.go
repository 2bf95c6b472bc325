//go:build linux || darwin

package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A doorbell lets the background goroutine of the shared-memory transport sleep until a peer's
// record arrives without a timer and without a goroutine blocked in a system call: it is a
// named pipe beside the rank's segment whose read end sits in Go's network poller. The owner
// arms the bell word in its segment before its last look at the rings; a producer that finds
// it armed after writing a record disarms it and writes one byte into the pipe. Patient
// waiters (Comm.Patient) leave their progress to that goroutine. Naps, the alternative, wake
// up to a thousand times a second, and on a host whose cores all compute each wake preempts a
// computing thread; a futex sleep holds a processor (see shmPatientNapMin in comm/shm.go).
type Bell struct {
	Path   string
	reader *os.File // in the network poller: a read parks the goroutine
	self   int      // a write end of our own: shutdown rings it, and it keeps EOF away
	broken atomic.Bool
}

// CreateBell makes the owner's pipe; nil (naps instead) where the directory cannot hold one.
func CreateBell(segPath string) *Bell {
	path := segPath + ".bell"
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil
	}
	// Read end first, non-blocking, so that opening it does not wait for a writer.
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return nil
	}
	wfd, err := openBellWriter(path)
	if err != nil {
		unix.Close(rfd)
		os.Remove(path)
		return nil
	}
	reader := os.NewFile(uintptr(rfd), path)
	// A descriptor the poller cannot watch would make every read fail at once.
	if reader.SetReadDeadline(time.Time{}) != nil {
		reader.Close()
		unix.Close(wfd)
		os.Remove(path)
		return nil
	}
	return &Bell{Path: path, reader: reader, self: wfd}
}

// openBellWriter opens a write end of a peer's (or our own) bell pipe.
func openBellWriter(path string) (int, error) {
	return unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// OpenPeerBell opens the write end of a peer's doorbell, given the path the peer sent: only its
// segment's name with the bell's suffix, and only a named pipe (never a file to write into).
func OpenPeerBell(path, segPath string) (int, error) {
	if path != segPath+".bell" {
		return -1, fmt.Errorf("doorbell %q is not beside segment %q", path, segPath)
	}
	fd, err := openBellWriter(path)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(fd)
		return -1, fmt.Errorf("doorbell %q is not a named pipe", path)
	}
	return fd, nil
}

// RingFD writes the byte that wakes the bell's sleeper. A full pipe already holds a wake.
func RingFD(fd int) {
	var b = [1]byte{1}
	unix.Write(fd, b[:])
}

// Ring wakes the bell's own sleeper (shutdown: the owner stops waiting).
func (b *Bell) Ring() { RingFD(b.self) }

// wait sleeps until a byte comes or the timeout passes, and consumes what came (a stale byte
// only costs one more look at the rings). It reports false once the pipe failed, after which
// the caller naps instead.
func (b *Bell) Wait(timeout time.Duration) bool {
	if b.broken.Load() {
		return false
	}
	var buf [64]byte
	b.reader.SetReadDeadline(time.Now().Add(timeout))
	if _, err := b.reader.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		b.broken.Store(true)
		return false
	}
	return true
}

// close releases the pipe; its name went with the segment's.
func (b *Bell) Close() {
	b.reader.Close()
	unix.Close(b.self)
}
