package comm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/inproc"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// runNetTransports are the GORUN_RUN_TRANSPORT values: every transport name but auto.
func runNetTransports() []string {
	var names []string
	for _, t := range jobenv.Transports {
		if t != jobenv.TransportAuto {
			names = append(names, t)
		}
	}
	return names
}

// errReturned is the cause other ranks see when a goroutine rank's function returned.
var errReturned = errors.New("rank's function returned")

// Run starts n ranks as goroutines of this process, connected by the in-process transport, runs
// fn on each with its world communicator and waits for all of them. It returns the first error
// a rank returned (or a panic, converted to an error), naming the rank. When one rank returns
// (or fails), the other ranks' operations that need it fail with a *PeerError instead of
// hanging.
//
// With the environment variable GORUN_RUN_TRANSPORT (RunTransportVar) set to a transport's name
// (jobenv.Transports: "tcp", "shm" or "verbs"),
// the ranks are connected through that network transport instead, each with its own sockets
// and segments, and a rank that returns waits (Finalize) for the others.
func Run(n int, fn func(c *Comm) error) error {
	if n < 1 {
		return fmt.Errorf("comm: Run needs at least 1 rank, got %d", n)
	}
	switch t := os.Getenv(RunTransportVar); {
	case t == "":
	case t != jobenv.TransportAuto && slices.Contains(jobenv.Transports, t):
		return runNet(n, t, fn)
	default:
		return fmt.Errorf("comm: %s=%q: want %s", RunTransportVar, t, strings.Join(runNetTransports(), ", "))
	}
	host := hostname()
	hostIDs := make([]string, n) // goroutine ranks share the process's machine
	for r := range hostIDs {
		hostIDs[r] = hostID()
	}
	worlds := make([]*world, n)
	engines := make([]*core.Engine, n)
	for r := range worlds {
		worlds[r] = newWorld(r, n, host, hostIDs)
		engines[r] = worlds[r].eng
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
		w := worlds[r]
		w.useOnly(&inproc.Transport{Self: r, Engines: engines})
		w.abort = func(rank, code int) {
			mu.Lock()
			aborted[rank] = true
			mu.Unlock()
			err := &AbortError{Rank: rank, Code: code}
			record(err)
			for _, w := range worlds {
				w.lose(rank, err)
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
				for i, w := range worlds {
					if i != r {
						w.lose(r, cause)
					}
				}
				engines[r].Shutdown(fmt.Errorf("rank %d: %w", r, cause))
			}()
			err = fn(newComm(w, worldCtx, nil))
		}()
	}
	wg.Wait()
	return first
}
