package tcp

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// epollWaiter sleeps on the links through an epoll set of its own whose descriptor is in Go's
// netpoller: the goroutine parks in the scheduler, holding no processor, where one blocked
// in poll(2) holds its processor for the whole sleep, which the runtime's monitor thread
// hands off at the cost of preempting computing threads (see shmPatientNapMin in comm/internal/shmtp/shmtp.go).
// Every rank with links sleeps here, shared-memory jobs included (their links carry liveness).
type epollWaiter struct {
	epfd   int
	f      *os.File // epfd, readable when a descriptor of the set is ready
	rc     syscall.RawConn
	wakeFD int // an eventfd in the set: wake makes it readable
	reg    map[int32]uint32
	evs    []unix.EpollEvent
	index  map[int32]int
}

// NewLinkWaiter returns an epollWaiter, or a poll(2) waiter where the kernel or the runtime
// will not have one.
func NewLinkWaiter() LinkWaiter {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return PollWaiter{}
	}
	wakeFD, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return PollWaiter{}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakeFD)}
	if unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakeFD, &ev) != nil || unix.SetNonblock(epfd, true) != nil {
		unix.Close(epfd)
		unix.Close(wakeFD)
		return PollWaiter{}
	}
	f := os.NewFile(uintptr(epfd), "gorun-links")
	rc, err := f.SyscallConn()
	// A deadline is refused for a file outside the netpoller.
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		unix.Close(wakeFD)
		return PollWaiter{}
	}
	return &epollWaiter{epfd: epfd, f: f, rc: rc, wakeFD: wakeFD, reg: map[int32]uint32{},
		index: map[int32]int{}}
}

func (e *epollWaiter) Wait(fds []unix.PollFd, timeout time.Duration) (int, error) {
	clear(e.index)
	for i := range fds {
		fd := fds[i].Fd
		fds[i].Revents = 0
		e.index[fd] = i
		want := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
		if fds[i].Events&unix.POLLOUT != 0 {
			want |= unix.EPOLLOUT
		}
		have, ok := e.reg[fd]
		if ok && have == want {
			continue
		}
		op := unix.EPOLL_CTL_MOD
		if !ok {
			op = unix.EPOLL_CTL_ADD
		}
		ev := unix.EpollEvent{Events: want, Fd: fd}
		if err := unix.EpollCtl(e.epfd, op, int(fd), &ev); err != nil {
			return 0, err
		}
		e.reg[fd] = want
	}
	for fd := range e.reg {
		if _, ok := e.index[fd]; !ok {
			unix.EpollCtl(e.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
			delete(e.reg, fd)
		}
	}
	if cap(e.evs) < len(fds)+1 {
		e.evs = make([]unix.EpollEvent, len(fds)+1)
	}
	evs := e.evs[:len(fds)+1]
	if err := e.f.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	var n int
	var werr error
	// The callback only looks (timeout 0); the runtime parks the goroutine until the set's
	// descriptor turns readable (a new event in the set) or the deadline passes.
	err := e.rc.Read(func(uintptr) bool {
		for {
			n, werr = unix.EpollWait(e.epfd, evs, 0)
			if werr != unix.EINTR {
				return n != 0 || werr != nil
			}
		}
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, ev := range evs[:n] {
		if int(ev.Fd) == e.wakeFD {
			var b [8]byte
			unix.Read(e.wakeFD, b[:])
			continue
		}
		i, ok := e.index[ev.Fd]
		if !ok {
			continue
		}
		var re int16
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP) != 0 {
			re |= unix.POLLIN
		}
		if ev.Events&unix.EPOLLOUT != 0 {
			re |= unix.POLLOUT
		}
		if ev.Events&unix.EPOLLERR != 0 {
			re |= unix.POLLERR
		}
		if ev.Events&unix.EPOLLHUP != 0 {
			re |= unix.POLLHUP
		}
		fds[i].Revents = re
		ready++
	}
	return ready, nil
}

func (e *epollWaiter) Wake() {
	one := uint64(1)
	unix.Write(e.wakeFD, (*[8]byte)(unsafe.Pointer(&one))[:])
}

func (e *epollWaiter) Close() {
	e.f.Close()
	unix.Close(e.wakeFD)
}
