package tcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The epoll waiter keeps poll(2)'s contract: a timeout returns 0, input and room for output
// are reported on the right descriptor, wake cuts a sleep short, and a link dropped from the
// list is no longer watched.
func TestEpollLinkWaiter(t *testing.T) {
	w := NewLinkWaiter()
	defer w.Close()
	_, ok := w.(*epollWaiter)
	require.True(t, ok, "no epoll waiter on Linux")

	pair := func() (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0], fds[1]
	}
	a, aPeer := pair()
	b, bPeer := pair()
	fds := []unix.PollFd{{Fd: int32(a), Events: unix.POLLIN}, {Fd: int32(b), Events: unix.POLLIN}}

	t0 := time.Now()
	n, err := w.Wait(fds, 30*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.GreaterOrEqual(t, time.Since(t0), 25*time.Millisecond, "returned before the timeout")

	// Input on the second link, sent while the waiter sleeps.
	go func() {
		time.Sleep(10 * time.Millisecond)
		unix.Write(bPeer, []byte("x"))
	}()
	n, err = w.Wait(fds, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, fds[0].Revents)
	require.NotZero(t, fds[1].Revents&unix.POLLIN)
	// Unread input stays ready, as with poll(2).
	n, err = w.Wait(fds, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var buf [8]byte
	_, err = unix.Read(b, buf[:])
	require.NoError(t, err)

	// wake ends a sleep at once and reports nothing ready.
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.Wake()
	}()
	t0 = time.Now()
	n, err = w.Wait(fds, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Less(t, time.Since(t0), 2*time.Second, "wake did not end the sleep")

	// Room for output, asked for on one link only.
	fds[0].Events |= unix.POLLOUT
	n, err = w.Wait(fds, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int16(unix.POLLOUT), fds[0].Revents)
	require.Zero(t, fds[1].Revents)

	// A link left out is not watched; a closed peer reads as input (end of stream).
	unix.Write(aPeer, []byte("y"))
	unix.Close(bPeer)
	only := fds[1:]
	n, err = w.Wait(only, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NotZero(t, only[0].Revents&unix.POLLIN)
}
