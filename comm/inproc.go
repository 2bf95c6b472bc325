package comm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// inprocTransport connects goroutine ranks of one process: a send goes straight to the
// destination's engine.
type inprocTransport struct {
	self    int
	engines []*engine
}

func (t *inprocTransport) send(dst int, ctx uint64, tag int, payload []byte, req *Request) {
	deliverLocal(t.engines[dst], t.self, ctx, tag, payload, req)
}

func (t *inprocTransport) finalize() error { return nil }

// errReturned is the cause other ranks see when a goroutine rank's function returned.
var errReturned = errors.New("rank's function returned")

// Run starts n ranks as goroutines of this process, connected by the in-process transport, runs
// fn on each with its world communicator and waits for all of them. It returns the first error
// a rank returned (or a panic, converted to an error), naming the rank. When one rank returns
// (or fails), the other ranks' operations that need it fail with a *PeerError instead of
// hanging.
//
// With the environment variable GORUN_RUN_TRANSPORT set to "tcp", "shm" or "verbs" (RunTransportVar),
// the ranks are connected through that network transport instead, each with its own sockets
// and segments, and a rank that returns waits (Finalize) for the others.
func Run(n int, fn func(c *Comm) error) error {
	if n < 1 {
		return fmt.Errorf("comm: Run needs at least 1 rank, got %d", n)
	}
	switch t := os.Getenv(RunTransportVar); t {
	case "":
	case "tcp", "shm", "verbs":
		return runNet(n, t, fn)
	default:
		return fmt.Errorf("comm: %s=%q: want tcp, shm or verbs", RunTransportVar, t)
	}
	engines := make([]*engine, n)
	for r := range engines {
		engines[r] = newEngine(r)
	}
	host := hostname()
	hostIDs := make([]string, n) // goroutine ranks share the process's machine
	for r := range hostIDs {
		hostIDs[r] = hostID()
	}
	var (
		mu      sync.Mutex
		first   error
		aborted = make([]bool, n)
	)
	record := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		w := &world{rank: r, size: n, eng: engines[r], tr: &inprocTransport{self: r, engines: engines}, host: host, hostIDs: hostIDs}
		w.abort = func(rank, code int) {
			mu.Lock()
			aborted[rank] = true
			mu.Unlock()
			err := &AbortError{Rank: rank, Code: code}
			record(err)
			for _, e := range engines {
				e.peerFailed(rank, err)
			}
			runtime.Goexit()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("rank %d panicked: %v\n%s", r, p, debug.Stack())
				}
				mu.Lock()
				wasAborted := aborted[r]
				mu.Unlock()
				cause := errReturned
				switch {
				case wasAborted:
					cause = &AbortError{Rank: r, Code: -1}
				case err != nil:
					record(fmt.Errorf("rank %d: %w", r, err))
					cause = err
				}
				for i, e := range engines {
					if i != r {
						e.peerFailed(r, cause)
					}
				}
				engines[r].shutdown(fmt.Errorf("rank %d: %w", r, cause))
			}()
			err = fn(newComm(w, worldCtx, nil))
		}()
	}
	wg.Wait()
	return first
}
