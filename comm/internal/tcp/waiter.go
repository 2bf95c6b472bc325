package tcp

import (
	"time"

	"golang.org/x/sys/unix"
)

// LinkWaiter is how the transport's background goroutine sleeps on the links: Wait is poll(2)'s contract
// (fds' Revents set, the number of ready descriptors returned; 0 when the timeout passed or
// Wake was called).
type LinkWaiter interface {
	Wait(fds []unix.PollFd, timeout time.Duration) (int, error)
	Wake()
	Close()
}

// PollWaiter sleeps in poll(2); Wake does not shorten the sleep.
type PollWaiter struct{}

// Wait is poll(2).
func (PollWaiter) Wait(fds []unix.PollFd, timeout time.Duration) (int, error) {
	return unix.Poll(fds, int(timeout/time.Millisecond))
}

// Wake does nothing.
func (PollWaiter) Wake() {}

// Close does nothing.
func (PollWaiter) Close() {}
