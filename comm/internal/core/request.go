package core

import (
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

// Request is a pending non-blocking operation (Isend, Irecv, or a non-blocking collective).
// Its result is read with Wait or Test; Done gives a channel for select.
type Request struct {
	state atomic.Uint32 // reqPending, reqCompleting (result being stored), reqDone
	st    Status
	err   error
	// prog, when set, is the transport whose waiters drive its progress (they poll shared
	// memory rings or TCP sockets themselves: a hand-off from another goroutine would cost a
	// thread wake-up per message) and are told of completions.
	Prog Progressor
	// Patient: the waiter sleeps at once instead of polling first (Comm.Patient).
	Patient bool
	// Spun: the caller polled for it already (comm/internal/shmtp/fast.go), so a waiter that would spin
	// briefly before it sleeps sleeps sooner.
	Spun bool

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

// Progressor is a transport whose progress waiters drive: poll returns once r is finished (or
// the transport stops), and kick wakes waiters sleeping in poll when some other goroutine
// completes a request.
type Progressor interface {
	Poll(r *Request)
	Kick()
}

// NewRequest returns a pending request.
func NewRequest() *Request { return &Request{} }

// Complete records the result; later calls are ignored so that a racing failure path (peer
// death) and a normal completion cannot both complete it.
func (r *Request) Complete(st Status, err error) {
	if !r.state.CompareAndSwap(reqPending, reqCompleting) {
		return
	}
	r.st, r.err = st, err
	// With Done's hasDone swap and state load, this swap and hasDone load make sure one of
	// the two closes the channel. Swap rather than Store: a read-modify-write keeps the load
	// after it under qemu-user's arm64 emulation on x86 hosts too, which lets a load pass an
	// earlier atomic Store (STLR then LDAR), and costs the same XCHG as Store on amd64.
	r.state.Swap(reqDone)
	if r.hasDone.Load() {
		r.mu.Lock()
		r.closeDone()
		r.mu.Unlock()
	}
	if r.Prog != nil {
		r.Prog.Kick()
	}
}

// Finished reports that the result is stored and may be read.
func (r *Request) Finished() bool { return r.state.Load() == reqDone }

// closeDone closes the done channel once; the caller holds r.mu.
func (r *Request) closeDone() {
	if !r.doneClosed {
		r.doneClosed = true
		close(r.done)
	}
}

// Wait blocks until the operation completes and returns its status.
func (r *Request) Wait() (Status, error) {
	if !r.Finished() {
		if r.Prog != nil {
			r.Prog.Poll(r)
		}
		if !r.Finished() {
			<-r.Done()
		}
	}
	return r.st, r.err
}

// Test reports whether the operation has completed, without blocking.
func (r *Request) Test() (done bool, st Status, err error) {
	if !r.Finished() {
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
		r.hasDone.Swap(true) // Swap, not Store: see Complete
		if r.Finished() {
			r.closeDone()
		}
	}
	return r.done
}

// CompletedRequest returns a request that is already done.
func CompletedRequest(st Status, err error) *Request {
	r := NewRequest()
	r.Complete(st, err)
	return r
}
