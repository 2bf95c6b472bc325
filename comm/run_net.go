package comm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// RunTransportVar names the environment variable that makes Run connect its goroutine ranks
// through the network transports ("tcp", or "shm" for shared memory with TCP as the liveness
// link) instead of in-process delivery: each rank then has its own sockets and segments, exactly
// as a separate process would, so test suites written for Run exercise the real transports.
const RunTransportVar = "GORUN_RUN_TRANSPORT"

var runJobSeq atomic.Int64

// runNet runs n goroutine ranks, each bootstrapping its own transports over loopback.
func runNet(n int, transport string, fn func(c *Comm) error) error {
	job := fmt.Sprintf("run%d-%d", os.Getpid(), runJobSeq.Add(1))
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
			id := identity{Source: "Run", Rank: r, Size: n, Coord: coord, Secret: []byte(job), JobID: job, PeerTimeout: 30 * time.Second, Transport: transport}
			var c *Comm
			if n == 1 {
				c = singleton()
			} else if c, errs[r] = initTCP(id); errs[r] != nil {
				return
			}
			aborted := false
			c.w.abort = func(rank, code int) {
				aborted = true
				errs[r] = &AbortError{Rank: rank, Code: code}
				closeLinks(c, errs[r])
				runtime.Goexit()
			}
			defer func() {
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("rank %d panicked: %v\n%s", r, p, debug.Stack())
				}
				if aborted {
					return
				}
				if errs[r] != nil {
					// As a process exiting: its links close and its peers see the failure.
					closeLinks(c, errs[r])
					return
				}
				errs[r] = c.Finalize()
			}()
			errs[r] = fn(c)
		}()
	}
	wg.Wait()
	var all []error
	for r, err := range errs {
		var ae *AbortError
		if errors.As(err, &ae) {
			all = append(all, err)
		} else if err != nil {
			all = append(all, fmt.Errorf("rank %d: %w", r, err))
		}
	}
	return errors.Join(all...)
}

// closeLinks breaks every link of a failed goroutine rank, as its process's exit would.
func closeLinks(c *Comm, cause error) {
	c.w.abandonTransports(fmt.Errorf("rank %d failed: %w", c.w.rank, cause))
	c.w.eng.Shutdown(cause)
}
