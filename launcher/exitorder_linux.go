//go:build linux

package launcher

import (
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// exitOrder reports ranks' exits, in the order they happened, on its notices channel.
type exitOrder interface {
	// watch starts watching a rank and the read ends of its output pipes; false means it
	// cannot, and the rank's waiter reports the exit instead.
	watch(rank, pid int, outputs []*os.File) bool
	stop()
}

type noOrder struct{}

func (noOrder) watch(int, int, []*os.File) bool { return false }
func (noOrder) stop()                           {}

// epollOrder finds the order in which ranks exited from one epoll instance, whose ready list
// keeps the order in which descriptors became ready: one goroutine reading it sees the kernel's
// order, however late it is scheduled. (Waiter goroutines would each wake at the scheduler's
// whim; on a loaded machine the rank that died second could be seen first.)
//
// A rank counts as gone at the first of two events: its output pipes hung up (the kernel closes
// a dying process's descriptors early in its exit) or its pidfd became readable (its exit
// completed; later for a process with many threads, and the only sign when a child of the rank
// holds the pipes open). This is the order of exits, not of causes: a dying rank's sockets may
// close a moment before its pipes (the kernel releases files last-opened first), and on a loaded
// machine a peer that learns of it can finish exiting before the dying rank does; the
// supervisor's blame weighs that (see supervisor.blame).
type epollOrder struct {
	epfd    int
	notices chan<- int
	stopped atomic.Bool

	mu      sync.Mutex
	started bool
	ranks   map[int]*watched
}

type watched struct {
	pidfd   int
	pipes   []int // dups of the output pipes' read ends; -1 once hung up
	open    int   // pipes not hung up yet
	noticed bool
}

// Event sources, kept in the event's Pad: the pidfd, or pipe i as srcPipe+i.
const (
	srcPidfd = 0
	srcPipe  = 1
)

func newExitOrder(notices chan<- int) exitOrder {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return noOrder{}
	}
	return &epollOrder{epfd: epfd, notices: notices, ranks: map[int]*watched{}}
}

func (o *epollOrder) watch(rank, pid int, outputs []*os.File) bool {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false // kernel before 5.3, or seccomp: fall back to the waiters' order
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(rank), Pad: srcPidfd}
	if err := unix.EpollCtl(o.epfd, unix.EPOLL_CTL_ADD, pidfd, &ev); err != nil {
		unix.Close(pidfd)
		return false
	}
	w := &watched{pidfd: pidfd}
	for i, f := range outputs {
		// A dup of our own, so the pump closing its descriptor at EOF cannot race with this
		// registration. No event bits: only the hang-up (always reported) is wanted.
		fd := dupFile(f)
		if fd < 0 {
			continue
		}
		ev := unix.EpollEvent{Events: 0, Fd: int32(rank), Pad: int32(srcPipe + i)}
		if unix.EpollCtl(o.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
			unix.Close(fd)
			continue
		}
		for len(w.pipes) < i {
			w.pipes = append(w.pipes, -1)
		}
		w.pipes = append(w.pipes, fd)
		w.open++
	}
	o.mu.Lock()
	o.ranks[rank] = w
	if !o.started {
		o.started = true
		go o.run()
	}
	o.mu.Unlock()
	return true
}

func dupFile(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	_ = rc.Control(func(s uintptr) {
		if d, err := unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			fd = d
		}
	})
	return fd
}

func (o *epollOrder) run() {
	events := make([]unix.EpollEvent, 64)
	for !o.stopped.Load() {
		// A timeout lets stop end the loop without another descriptor to wake it.
		n, err := unix.EpollWait(o.epfd, events, 200)
		if err != nil && err != unix.EINTR {
			break
		}
		for _, ev := range events[:max(n, 0)] {
			if rank, ok := o.event(ev); ok {
				o.notices <- rank
			}
		}
	}
	o.mu.Lock()
	for _, w := range o.ranks {
		o.release(w)
	}
	o.ranks = nil
	unix.Close(o.epfd)
	o.mu.Unlock()
}

// event records one readiness event and says whether it is the rank's first sign of exit.
func (o *epollOrder) event(ev unix.EpollEvent) (int, bool) {
	rank := int(ev.Fd)

	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.ranks[rank]
	if w == nil {
		return 0, false
	}
	if ev.Pad == srcPidfd {
		// Level-triggered and readable until reaped: done with this rank for good.
		o.release(w)
		delete(o.ranks, rank)
	} else {
		i := int(ev.Pad) - srcPipe
		if i < 0 || i >= len(w.pipes) || w.pipes[i] < 0 {
			return 0, false
		}
		// A hung-up pipe stays ready: stop watching it.
		o.closeFd(w.pipes[i])
		w.pipes[i] = -1
		w.open--
		if w.open > 0 {
			return 0, false
		}
	}
	if w.noticed {
		return 0, false
	}
	w.noticed = true
	return rank, true
}

func (o *epollOrder) closeFd(fd int) {
	unix.EpollCtl(o.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	unix.Close(fd)
}

func (o *epollOrder) release(w *watched) {
	if w.pidfd >= 0 {
		o.closeFd(w.pidfd)
		w.pidfd = -1
	}
	for i, fd := range w.pipes {
		if fd >= 0 {
			o.closeFd(fd)
			w.pipes[i] = -1
		}
	}
}

func (o *epollOrder) stop() {
	o.stopped.Store(true)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.started {
		unix.Close(o.epfd)
	}
}
