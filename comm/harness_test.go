package comm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

var jobSeq atomic.Int64

// freePort returns a loopback address with a port that was free a moment ago.
func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runNet runs n ranks as goroutines of this process, each with its own network transports
// (tcp, or shared memory with tcp as the liveness link): the same code path as separate
// processes, minus the process.
func runNet(n int, transport string, fn func(c *Comm) error) error {
	job := fmt.Sprintf("test%d-%d", os.Getpid(), jobSeq.Add(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	coord := ln.Addr().String()
	ln.Close()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := identity{source: "test", rank: r, size: n, coord: coord, secret: []byte("test-secret"), jobID: job, peerTimeout: 20 * time.Second, transport: transport}
			var c *Comm
			if n == 1 {
				c = singleton()
			} else if c, errs[r] = initTCP(id); errs[r] != nil {
				return
			}
			if errs[r] = fn(c); errs[r] != nil {
				// Like a process exiting: its links close and its peers see the failure.
				if t, ok := c.w.tr.(*tcpTransport); ok {
					if t.shm != nil {
						t.shm.shutdown()
					}
					for _, p := range t.peers {
						if p != nil {
							p.fail(fmt.Errorf("rank %d failed: %w", r, errs[r]))
						}
					}
				}
				return
			}
			errs[r] = c.Finalize()
		}()
	}
	wg.Wait()
	var all []error
	for r, err := range errs {
		if err != nil {
			all = append(all, fmt.Errorf("rank %d: %w", r, err))
		}
	}
	return errors.Join(all...)
}
