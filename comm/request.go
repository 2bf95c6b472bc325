package comm

import (
	"reflect"
	"sync"
	"sync/atomic"
)

// Status describes a received (or probed) message. Source and Tag are the actual values even when
// the receive used AnySource or AnyTag; Count is the message's length in bytes.
type Status struct {
	Source int
	Tag    int
	Count  int
}

// Count returns how many elements of type T the status's message holds.
func Count[T Elem](s Status) int {
	var zero T
	return s.Count / elemSize(zero)
}

// Request is a pending non-blocking operation (Isend, Irecv, or a non-blocking collective).
// Its result is read with Wait or Test; Done gives a channel for select.
type Request struct {
	state atomic.Uint32 // reqPending, reqCompleting (result being stored), reqDone
	st    Status
	err   error
	// prog, when set, is the transport whose waiters drive its progress (they poll shared
	// memory rings or TCP sockets themselves: a hand-off from another goroutine would cost a
	// thread wake-up per message) and are told of completions.
	prog progressor
	// patient: the waiter sleeps at once instead of polling first (Comm.Patient).
	patient bool
	// spun: the caller polled for it already (shm_fast.go), so a waiter that would spin
	// briefly before it sleeps sleeps sooner.
	spun bool

	// The done channel is made only for a waiter that blocks on it (most requests of a
	// polling transport complete without one).
	hasDone    atomic.Bool
	mu         sync.Mutex // guards done and doneClosed
	done       chan struct{}
	doneClosed bool
}

const (
	reqPending = iota
	reqCompleting
	reqDone
)

// progressor is a transport whose progress waiters drive: poll returns once r is finished (or
// the transport stops), and kick wakes waiters sleeping in poll when some other goroutine
// completes a request.
type progressor interface {
	poll(r *Request)
	kick()
}

func newRequest() *Request { return &Request{} }

// complete records the result; later calls are ignored so that a racing failure path (peer
// death) and a normal completion cannot both complete it.
func (r *Request) complete(st Status, err error) {
	if !r.state.CompareAndSwap(reqPending, reqCompleting) {
		return
	}
	r.st, r.err = st, err
	r.state.Store(reqDone)
	// Sequentially consistent with Done's hasDone store and state load: one of the two
	// closes the channel.
	if r.hasDone.Load() {
		r.mu.Lock()
		r.closeDone()
		r.mu.Unlock()
	}
	if r.prog != nil {
		r.prog.kick()
	}
}

// finished reports that the result is stored and may be read.
func (r *Request) finished() bool { return r.state.Load() == reqDone }

// closeDone closes the done channel once; the caller holds r.mu.
func (r *Request) closeDone() {
	if !r.doneClosed {
		r.doneClosed = true
		close(r.done)
	}
}

// Wait blocks until the operation completes and returns its status.
func (r *Request) Wait() (Status, error) {
	if !r.finished() {
		if r.prog != nil {
			r.prog.poll(r)
		}
		if !r.finished() {
			<-r.Done()
		}
	}
	return r.st, r.err
}

// Test reports whether the operation has completed, without blocking.
func (r *Request) Test() (done bool, st Status, err error) {
	if !r.finished() {
		return false, Status{}, nil
	}
	return true, r.st, r.err
}

// Done returns a channel closed when the operation completes.
func (r *Request) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
		r.hasDone.Store(true)
		if r.finished() {
			r.closeDone()
		}
	}
	return r.done
}

// WaitAll waits for every request (nil entries are skipped) and returns the first error in
// argument order. It always waits for all of them, so no buffer is still in use on return.
func WaitAll(reqs ...*Request) error {
	var first error
	for _, r := range reqs {
		if r == nil {
			continue
		}
		if _, err := r.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WaitAny waits until one of the requests completes and returns its index and result. Nil
// entries are skipped; with no non-nil request it returns -1.
func WaitAny(reqs ...*Request) (int, Status, error) {
	for i, r := range reqs {
		if r == nil {
			continue
		}
		if ok, st, err := r.Test(); ok {
			return i, st, err
		}
	}
	cases := make([]reflect.SelectCase, 0, len(reqs))
	index := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r == nil {
			continue
		}
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.Done())})
		index = append(index, i)
	}
	if len(cases) == 0 {
		return -1, Status{}, nil
	}
	chosen, _, _ := reflect.Select(cases)
	i := index[chosen]
	st, err := reqs[i].Wait()
	return i, st, err
}

// Go runs fn in a new goroutine and returns a Request completed with its result. Non-blocking
// collectives are built this way, so they compose with WaitAll and WaitAny.
func Go(fn func() error) *Request {
	r := newRequest()
	go func() { r.complete(Status{}, fn()) }()
	return r
}

// sentRequest is the request of every send that completed when it was posted (Isend of a
// small message to a shared-memory peer): it is complete, and nothing changes it again.
var sentRequest = completedRequest(Status{}, nil)

// completedRequest returns a request that is already done.
func completedRequest(st Status, err error) *Request {
	r := newRequest()
	r.complete(st, err)
	return r
}
