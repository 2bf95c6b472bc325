package comm

import (
	"reflect"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// Status describes a received (or probed) message. Source and Tag are the actual values even when
// the receive used AnySource or AnyTag; Count is the message's length in bytes.
type Status = core.Status

// Count returns how many elements of type T the status's message holds.
func Count[T Elem](s Status) int {
	var zero T
	return s.Count / elemSize(zero)
}

// Request is a pending non-blocking operation (Isend, Irecv, or a non-blocking collective).
// Its result is read with its methods: Wait blocks until the operation completes and returns
// its status; Test reports whether it has completed, without blocking; Done returns a channel
// closed when it completes, for select.
type Request = core.Request

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
	r := core.NewRequest()
	go func() { r.Complete(Status{}, fn()) }()
	return r
}

// sentRequest is the request of every send that completed when it was posted (Isend of a
// small message to a shared-memory peer): it is complete, and nothing changes it again.
var sentRequest = core.CompletedRequest(Status{}, nil)
