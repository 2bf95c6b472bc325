package comm

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// An engine matches incoming messages with posted receives for one world rank, in MPI's order:
// a receive takes the earliest queued message that matches it, and an arriving message goes to
// the earliest posted receive that matches it. Because each transport hands messages from one
// peer to the engine in the order they were sent, messages between a pair never overtake one
// another on one communicator.
type engine struct {
	self       int
	mu         sync.Mutex
	cond       sync.Cond // signalled on every new unexpected message and every peer failure (Probe waits on it)
	posted     []*recvOp
	unexpected []*inMsg
	dead       map[int]error // world rank -> why it is gone
	ndead      atomic.Int32  // len(dead), read without the lock on every send
}

func newEngine(self int) *engine {
	e := &engine{self: self, dead: map[int]error{}}
	e.cond.L = &e.mu
	return e
}

// recvOp is a posted receive; its request is part of it (one allocation per receive).
type recvOp struct {
	req   Request
	src   int // world rank or AnySource
	ctx   uint64
	tag   int // or AnyTag
	buf   []byte
	alloc bool  // allocate buf to the message's size when matched (value receives)
	comm  *Comm // translates the source's world rank into the status's comm rank
}

// inMsg is a message that has arrived (or whose header has arrived) at this rank.
type inMsg struct {
	src  int // world rank
	ctx  uint64
	tag  int
	size int

	// Eager messages: data holds the payload once ready is set; a receive that matches the
	// message before then claims it and is completed when the payload is in.
	data  []byte
	ready bool
	claim *recvOp

	// Rendezvous messages: fetch moves the payload into the matched receive and completes it;
	// abort fails the sender when this rank can never take the message.
	fetch func(r *recvOp)
	abort func(err error)
}

func (r *recvOp) matches(m *inMsg) bool { return r.accepts(m.src, m.ctx, m.tag) }

func (r *recvOp) accepts(src int, ctx uint64, tag int) bool {
	return r.ctx == ctx && (r.src == AnySource || r.src == src) && (r.tag == AnyTag || r.tag == tag)
}

func (r *recvOp) status(src, tag, size int) Status {
	return Status{Source: r.comm.commRank(src), Tag: tag, Count: size}
}

// target returns the buffer the message's bytes go into (allocating for value receives) and
// the truncation error, if any, the receive will end with.
func (r *recvOp) target(src, tag, size int) ([]byte, error) {
	if r.alloc {
		r.buf = make([]byte, size)
	}
	if size > len(r.buf) {
		return r.buf, &TruncateError{Source: r.comm.commRank(src), Tag: tag, Size: size, Have: len(r.buf)}
	}
	return r.buf[:size], nil
}

// deliver copies a complete payload into the receive and completes it.
func (r *recvOp) deliver(src, tag int, data []byte) {
	dst, err := r.target(src, tag, len(data))
	copy(dst, data)
	r.req.complete(r.status(src, tag, len(data)), err)
}

// post matches r against the queued messages, or queues it.
func (e *engine) post(r *recvOp) {
	e.mu.Lock()
	for i, m := range e.unexpected {
		if !r.matches(m) {
			continue
		}
		copy(e.unexpected[i:], e.unexpected[i+1:])
		e.unexpected[len(e.unexpected)-1] = nil
		e.unexpected = e.unexpected[:len(e.unexpected)-1]
		switch {
		case m.fetch != nil:
			e.mu.Unlock()
			m.fetch(r)
		case !m.ready:
			m.claim = r
			e.mu.Unlock()
		default:
			e.mu.Unlock()
			r.deliver(m.src, m.tag, m.data)
		}
		return
	}
	if err := e.failure(r); err != nil {
		e.mu.Unlock()
		r.req.complete(Status{}, err)
		return
	}
	e.posted = append(e.posted, r)
	e.mu.Unlock()
}

// failure tells why r can never be matched (its source, or for AnySource any member of its
// communicator, is gone); nil when it still can. Called with e.mu held.
func (e *engine) failure(r *recvOp) error {
	if len(e.dead) == 0 {
		return nil
	}
	if r.src != AnySource {
		if err, ok := e.dead[r.src]; ok {
			return &PeerError{Rank: r.src, Err: err}
		}
		return nil
	}
	for w, err := range e.dead {
		if r.comm.commRank(w) >= 0 {
			return &PeerError{Rank: w, Err: err}
		}
	}
	return nil
}

// firstFor reports whether a receive from world rank src with (ctx, tag) posted now would come
// first for the next message from src that it matches: no queued message of src's matches it,
// and no posted receive could take a message that it could.
func (e *engine) firstFor(src int, ctx uint64, tag int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.unexpected {
		if m.src == src && m.ctx == ctx && (tag == AnyTag || m.tag == tag) {
			return false
		}
	}
	for _, r := range e.posted {
		if r.ctx == ctx && (r.src == AnySource || r.src == src) && (r.tag == AnyTag || tag == AnyTag || r.tag == tag) {
			return false
		}
	}
	return true
}

// arrive hands the engine a new message from world rank src. If a posted receive matches, it
// is removed and returned (the caller moves the payload into it, and nothing is allocated);
// otherwise the message is queued as a new inMsg, which prepare fills in under the engine lock
// first (an eager payload copied or allocated, a rendezvous fetch), and returned.
func (e *engine) arrive(src int, ctx uint64, tag, size int, prepare func(m *inMsg)) (*recvOp, *inMsg) {
	e.mu.Lock()
	for i, r := range e.posted {
		if r.accepts(src, ctx, tag) {
			copy(e.posted[i:], e.posted[i+1:])
			e.posted[len(e.posted)-1] = nil
			e.posted = e.posted[:len(e.posted)-1]
			e.mu.Unlock()
			return r, nil
		}
	}
	m := &inMsg{src: src, ctx: ctx, tag: tag, size: size}
	prepare(m)
	e.unexpected = append(e.unexpected, m)
	e.cond.Broadcast()
	e.mu.Unlock()
	return nil, m
}

// ready marks an eager message's payload complete and delivers it to a receive that claimed it.
func (e *engine) ready(m *inMsg) {
	e.mu.Lock()
	m.ready = true
	r := m.claim
	m.claim = nil
	e.mu.Unlock()
	if r != nil {
		r.deliver(m.src, m.tag, m.data)
	}
}

// probe looks for a queued message matching (src, ctx, tag) without receiving it; with wait it
// blocks until one arrives or the source is gone.
func (e *engine) probe(c *Comm, src int, ctx uint64, tag int, wait bool) (Status, bool, error) {
	r := &recvOp{src: src, ctx: ctx, tag: tag, comm: c}
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for _, m := range e.unexpected {
			if r.matches(m) {
				return r.status(m.src, m.tag, m.size), true, nil
			}
		}
		if err := e.failure(r); err != nil {
			return Status{}, false, err
		}
		if !wait {
			return Status{}, false, nil
		}
		e.cond.Wait()
	}
}

// peerFailed records that world rank w is gone and fails every receive that can no longer be
// matched, and every queued message of w's that a receive claimed but whose payload will never
// finish arriving. Messages from w that arrived whole stay receivable.
func (e *engine) peerFailed(w int, cause error) {
	e.mu.Lock()
	if _, ok := e.dead[w]; ok {
		e.mu.Unlock()
		return
	}
	e.dead[w] = cause
	e.ndead.Store(int32(len(e.dead)))
	var failed []*recvOp
	var errs []error
	kept := e.posted[:0]
	for _, r := range e.posted {
		if err := e.failure(r); err != nil {
			failed = append(failed, r)
			errs = append(errs, err)
			continue
		}
		kept = append(kept, r)
	}
	clear(e.posted[len(kept):])
	e.posted = kept
	for _, m := range e.unexpected {
		if m.src == w && !m.ready && m.claim != nil && m.fetch == nil {
			failed = append(failed, m.claim)
			errs = append(errs, &PeerError{Rank: w, Err: cause})
			m.claim = nil
		}
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	for i, r := range failed {
		r.req.complete(Status{}, errs[i])
	}
}

// shutdown fails everything still pending at this rank (its own world is going away) and
// aborts the senders of rendezvous messages it will never take.
func (e *engine) shutdown(cause error) {
	e.mu.Lock()
	posted, unexpected := e.posted, e.unexpected
	e.posted, e.unexpected = nil, nil
	e.cond.Broadcast()
	e.mu.Unlock()
	for _, r := range posted {
		r.req.complete(Status{}, cause)
	}
	for _, m := range unexpected {
		if m.abort != nil {
			m.abort(&PeerError{Rank: e.self, Err: fmt.Errorf("receiver exited before taking the message: %w", cause)})
		}
		if m.claim != nil {
			m.claim.req.complete(Status{}, cause)
		}
	}
}

// isDead reports why world rank w is gone, or nil.
func (e *engine) isDead(w int) error {
	if e.ndead.Load() == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err, ok := e.dead[w]; ok {
		return &PeerError{Rank: w, Err: err}
	}
	return nil
}
