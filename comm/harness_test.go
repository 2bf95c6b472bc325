package comm

import (
	"net"
	"testing"
)

// transportCase runs an SPMD function over one transport inside the test process.
type transportCase struct {
	name string
	run  func(n int, fn func(c *Comm) error) error
}

var transports = []transportCase{
	{"inproc", Run},
	{"tcp", func(n int, fn func(c *Comm) error) error { return runNet(n, "tcp", fn) }},
	{"shm", func(n int, fn func(c *Comm) error) error { return runNet(n, "shm", fn) }},
}

// freePort returns a loopback address with a port that was free a moment ago.
func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
