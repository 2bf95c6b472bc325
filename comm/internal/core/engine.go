package core

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// An Engine matches incoming messages with posted receives for one world rank, in MPI's order:
// a receive takes the earliest queued message that matches it, and an arriving message goes to
// the earliest posted receive that matches it. Because each transport hands messages from one
// peer to the Engine in the order they were sent, messages between a pair never overtake one
// another on one communicator.
type Engine struct {
	self       int
	mu         sync.Mutex
	cond       sync.Cond // signalled on every new unexpected message and every peer failure (Probe waits on it)
	posted     []*RecvOp
	unexpected []*InMsg
	dead       map[int]error // world rank -> why it is gone
	NDead      atomic.Int32  // len(dead), read without the lock on every send
}

// NewEngine returns the engine of world rank self.
func NewEngine(self int) *Engine {
	e := &Engine{self: self, dead: map[int]error{}}
	e.cond.L = &e.mu
	return e
}

// RecvOp is a posted receive; its request is part of it (one allocation per receive).
type RecvOp struct {
	Req   Request
	Src   int // world rank or AnySource
	Ctx   uint64
	Tag   int // or AnyTag
	Buf   []byte
	Alloc bool        // allocate buf to the message's size when matched (value receives)
	Index map[int]int // translates the source's world rank into the status's comm rank (nil: the world)
}

// InMsg is a message that has arrived (or whose header has arrived) at this rank.
type InMsg struct {
	Src  int // world rank
	Ctx  uint64
	Tag  int
	Size int

	// Eager messages: data holds the payload once ready is set; a receive that matches the
	// message before then claims it and is completed when the payload is in.
	Data  []byte
	Ready bool
	Claim *RecvOp

	// Rendezvous messages: fetch moves the payload into the matched receive and completes it;
	// abort fails the sender when this rank can never take the message.
	Fetch func(r *RecvOp)
	Abort func(err error)
}

func (r *RecvOp) matches(m *InMsg) bool { return r.Accepts(m.Src, m.Ctx, m.Tag) }

// Accepts reports whether a message from world rank src with (ctx, tag) matches the receive.
func (r *RecvOp) Accepts(src int, ctx uint64, tag int) bool {
	return r.Ctx == ctx && (r.Src == AnySource || r.Src == src) && (r.Tag == AnyTag || r.Tag == tag)
}

// Status is the receive's status for a message from world rank src, in its communicator's ranks.
func (r *RecvOp) Status(src, tag, size int) Status {
	return Status{Source: CommRank(r.Index, src), Tag: tag, Count: size}
}

// Target returns the buffer the message's bytes go into (allocating for value receives) and
// the truncation error, if any, the receive will end with.
func (r *RecvOp) Target(src, tag, size int) ([]byte, error) {
	if r.Alloc {
		r.Buf = make([]byte, size)
	}
	if size > len(r.Buf) {
		return r.Buf, &TruncateError{Source: CommRank(r.Index, src), Tag: tag, Size: size, Have: len(r.Buf)}
	}
	return r.Buf[:size], nil
}

// Deliver copies a complete payload into the receive and completes it.
func (r *RecvOp) Deliver(src, tag int, data []byte) {
	dst, err := r.Target(src, tag, len(data))
	copy(dst, data)
	r.Req.Complete(r.Status(src, tag, len(data)), err)
}

// Post matches r against the queued messages, or queues it.
func (e *Engine) Post(r *RecvOp) {
	e.mu.Lock()
	for i, m := range e.unexpected {
		if !r.matches(m) {
			continue
		}
		copy(e.unexpected[i:], e.unexpected[i+1:])
		e.unexpected[len(e.unexpected)-1] = nil
		e.unexpected = e.unexpected[:len(e.unexpected)-1]
		switch {
		case m.Fetch != nil:
			e.mu.Unlock()
			m.Fetch(r)
		case !m.Ready:
			m.Claim = r
			e.mu.Unlock()
		default:
			e.mu.Unlock()
			r.Deliver(m.Src, m.Tag, m.Data)
		}
		return
	}
	if err := e.failure(r); err != nil {
		e.mu.Unlock()
		r.Req.Complete(Status{}, err)
		return
	}
	e.posted = append(e.posted, r)
	e.mu.Unlock()
}

// failure tells why r can never be matched (its source, or for AnySource any member of its
// communicator, is gone); nil when it still can. Called with e.mu held.
func (e *Engine) failure(r *RecvOp) error {
	if len(e.dead) == 0 {
		return nil
	}
	if r.Src != AnySource {
		if err, ok := e.dead[r.Src]; ok {
			return &PeerError{Rank: r.Src, Err: err}
		}
		return nil
	}
	for w, err := range e.dead {
		if CommRank(r.Index, w) >= 0 {
			return &PeerError{Rank: w, Err: err}
		}
	}
	return nil
}

// FirstFor reports whether a receive from world rank src with (ctx, tag) posted now would come
// first for the next message from src that it matches: no queued message of src's matches it,
// and no posted receive could take a message that it could.
func (e *Engine) FirstFor(src int, ctx uint64, tag int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.unexpected {
		if m.Src == src && m.Ctx == ctx && (tag == AnyTag || m.Tag == tag) {
			return false
		}
	}
	for _, r := range e.posted {
		if r.Ctx == ctx && (r.Src == AnySource || r.Src == src) && (r.Tag == AnyTag || tag == AnyTag || r.Tag == tag) {
			return false
		}
	}
	return true
}

// Arrive hands the Engine a new message from world rank src. If a posted receive matches, it
// is removed and returned (the caller moves the payload into it, and nothing is allocated);
// otherwise the message is queued as a new InMsg, which prepare fills in under the Engine lock
// first (an eager payload copied or allocated, a Rendezvous fetch), and returned.
func (e *Engine) Arrive(src int, ctx uint64, tag, size int, prepare func(m *InMsg)) (*RecvOp, *InMsg) {
	e.mu.Lock()
	for i, r := range e.posted {
		if r.Accepts(src, ctx, tag) {
			copy(e.posted[i:], e.posted[i+1:])
			e.posted[len(e.posted)-1] = nil
			e.posted = e.posted[:len(e.posted)-1]
			e.mu.Unlock()
			return r, nil
		}
	}
	m := &InMsg{Src: src, Ctx: ctx, Tag: tag, Size: size}
	prepare(m)
	e.unexpected = append(e.unexpected, m)
	e.cond.Broadcast()
	e.mu.Unlock()
	return nil, m
}

// Ready marks an eager message's payload complete and delivers it to a receive that claimed it.
func (e *Engine) Ready(m *InMsg) {
	e.mu.Lock()
	m.Ready = true
	r := m.Claim
	m.Claim = nil
	e.mu.Unlock()
	if r != nil {
		r.Deliver(m.Src, m.Tag, m.Data)
	}
}

// Probe looks for a queued message matching (src, ctx, tag) without receiving it; with wait it
// blocks until one arrives or the source is gone.
func (e *Engine) Probe(index map[int]int, src int, ctx uint64, tag int, wait bool) (Status, bool, error) {
	r := &RecvOp{Src: src, Ctx: ctx, Tag: tag, Index: index}
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for _, m := range e.unexpected {
			if r.matches(m) {
				return r.Status(m.Src, m.Tag, m.Size), true, nil
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

// PeerFailed records that world rank w is gone and fails every receive that can no longer be
// matched, and every queued message of w's that a receive claimed but whose payload will never
// finish arriving. Messages from w that arrived whole stay receivable.
func (e *Engine) PeerFailed(w int, cause error) {
	e.mu.Lock()
	if _, ok := e.dead[w]; ok {
		e.mu.Unlock()
		return
	}
	e.dead[w] = cause
	e.NDead.Store(int32(len(e.dead)))
	var failed []*RecvOp
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
		if m.Src == w && !m.Ready && m.Claim != nil && m.Fetch == nil {
			failed = append(failed, m.Claim)
			errs = append(errs, &PeerError{Rank: w, Err: cause})
			m.Claim = nil
		}
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	for i, r := range failed {
		r.Req.Complete(Status{}, errs[i])
	}
}

// Shutdown fails everything still pending at this rank (its own world is going away) and
// aborts the senders of Rendezvous messages it will never take.
func (e *Engine) Shutdown(cause error) {
	e.mu.Lock()
	posted, unexpected := e.posted, e.unexpected
	e.posted, e.unexpected = nil, nil
	e.cond.Broadcast()
	e.mu.Unlock()
	for _, r := range posted {
		r.Req.Complete(Status{}, cause)
	}
	for _, m := range unexpected {
		if m.Abort != nil {
			m.Abort(&PeerError{Rank: e.self, Err: fmt.Errorf("receiver exited before taking the message: %w", cause)})
		}
		if m.Claim != nil {
			m.Claim.Req.Complete(Status{}, cause)
		}
	}
}

// IsDead reports why world rank w is gone, or nil.
func (e *Engine) IsDead(w int) error {
	if e.NDead.Load() == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err, ok := e.dead[w]; ok {
		return &PeerError{Rank: w, Err: err}
	}
	return nil
}

// CommRank translates world rank w by a communicator's index (nil for the world
// communicator); -1 if w is not a member.
func CommRank(index map[int]int, w int) int {
	if index == nil {
		return w
	}
	if r, ok := index[w]; ok {
		return r
	}
	return -1
}
