package tcp

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A fixed send buffer is chosen only where the kernel grants all of it and autotuning would
// stop short of it; unreadable or malformed settings leave the kernel's default.
func TestChooseSendBuffer(t *testing.T) {
	for _, c := range []struct {
		wmemMax, tcpWmem string
		want             int
	}{
		{"4194304\n", "4096\t16384\t4194304\n", sendBufferWant},
		{"33554432", "4096 16384 4194304", sendBufferWant},
		{"212992\n", "4096\t16384\t4194304\n", 0},   // the kernel would clamp it: autotuning does better
		{"4194304\n", "4096\t16384\t16777216\n", 0}, // autotuning goes further
		{"", "4096 16384 4194304", 0},
		{"4194304", "", 0},
		{"lots", "4096 16384 4194304", 0},
		{"4194304", "4096 16384", 0},
		{"4194304", "4096 16384 big", 0},
	} {
		require.Equal(t, c.want, chooseSendBuffer(c.wmemMax, c.tcpWmem), "wmem_max %q, tcp_wmem %q", c.wmemMax, c.tcpWmem)
	}
}

// Detach gives the socket the chosen send buffer (the kernel reports twice the value set).
func TestDetachSendBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:])
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	fd, err := Detach(conn.(*net.TCPConn))
	require.NoError(t, err)
	defer unix.Close(fd)
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	require.NoError(t, err)
	if want := sendBuffer(); want > 0 {
		require.Equal(t, 2*want, got)
	} else {
		require.Less(t, got, 2*sendBufferWant, "a fixed send buffer was set where the kernel's settings rule it out")
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err)
	require.NotZero(t, fl&unix.O_NONBLOCK, "detached socket is blocking")
}
