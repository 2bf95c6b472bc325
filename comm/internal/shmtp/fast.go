//go:build linux || darwin

package shmtp

import (
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/sched"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// Blocking Send and Recv of small messages to and from a shared-memory peer allocate nothing:
// the send writes its record at once (it never needed a Request), and the receive reuses one
// receive operation (core.RecvOp) per world. Allocations per round trip would make the heap grow into fresh pages,
// each one a page fault, and a longer run pay the same in GC cycles, whose workers take a
// core from a spinning rank.

// SendDirect sends b to the shared-memory peer, a small message at once, when the link is in
// good standing; it reports false (having done nothing) otherwise, and the general path, which
// also produces every error, takes the message. The caller checked the arguments.
//
// A large message goes by rendezvous as from Isend, but its RTS tells the receiver that the
// sender waits (polls) until the message is taken, which allows a split copy (see wire.Split);
// a patient sender does not poll (it sleeps), so its receiver copies the whole message.
func (p *shmPeer) SendDirect(ctx uint64, patient bool, b []byte, tag int) (bool, error) {
	if p.t.stopping.Load() {
		return false, nil
	}
	if len(b) > shmEagerLimit {
		req := core.NewRequest()
		req.Prog, req.Patient = p.t, patient
		flags := uint8(wire.FlagSenderWaits)
		if patient {
			flags = 0
		}
		p.sendRTS(ctx, tag, b, req, flags)
		_, err := req.Wait()
		return true, err
	}
	return true, p.writeBlocking(&wire.Header{Type: wire.Eager, Tag: int32(tag), Ctx: ctx, Length: uint64(len(b))}, b)
}

// EagerMax is the largest message SendDirect buffers.
func (p *shmPeer) EagerMax() int { return shmEagerLimit }

// fastRecv is a blocking receive from one shared-memory peer that its caller serves itself:
// it holds pollMu while it polls, and the record that matches is copied from the ring straight
// into its buffer, with no Request, no engine queue and no allocation. The engine held no
// message it would match and no receive posted before it that could take its messages, so it
// comes first for every message that arrives while it waits: the order of MPI's matching is
// kept. A large message that matches (an RTS) turns it off (on false, done false), and the
// receive takes the general path, which finds that message first in the engine's queue.
type fastRecv struct {
	on   bool // a receive waits
	done bool // ... and is served: st and err are its result
	src  int  // world rank
	ctx  uint64
	tag  int // or AnyTag
	buf  []byte
	rank int // src in the receive's communicator, for the status
	st   core.Status
	err  error
}

func (f *fastRecv) takes(src int, ctx uint64, tag int) bool {
	return src == f.src && ctx == f.ctx && (f.tag == core.AnyTag || f.tag == tag)
}

// deliver copies an eager message into the receive and ends it (as core.RecvOp.Target and Deliver).
func (f *fastRecv) deliver(tag int, payload []byte) {
	n := copy(f.buf, payload)
	f.st = core.Status{Source: f.rank, Tag: tag, Count: len(payload)}
	if n < len(payload) {
		f.err = &core.TruncateError{Source: f.rank, Tag: tag, Size: len(payload), Have: len(f.buf)}
	}
	f.on, f.done = false, true
}

// shmFastPolls bounds the polls of a fast receive that find nothing (a few tens of
// microseconds on a core of its own) before it leaves the rest of its wait to the general
// path, which sleeps after a while.
const shmFastPolls = 4096

// recvFast serves a blocking receive from the peer (world rank ws, rank src of the receive's
// communicator, whose message space is ctx) as a
// fastRecv. It reports false, having taken nothing, when the receive must take the general
// path: a patient caller, another goroutine polling or serving its own receive, a message or
// receive already in the engine that comes first, a lost peer, a large message, or a wait
// longer than shmFastPolls.
// It also reports whether it spent its polls (spun).
func (p *shmPeer) recvFast(ctx uint64, patient bool, b []byte, src, ws, tag int) (ok, spun bool, st core.Status, err error) {
	t := p.t
	if patient || t.stopping.Load() || !t.pollMu.TryLock() {
		return false, false, core.Status{}, nil
	}
	e := t.eng
	if t.closed.Load() || e.NDead.Load() != 0 || !e.FirstFor(ws, ctx, tag) {
		t.pollMu.Unlock()
		return false, false, core.Status{}, nil
	}
	f := &t.fast
	*f = fastRecv{on: true, src: ws, ctx: ctx, tag: tag, buf: b, rank: src}
	t.waiters.Add(1)
	t.waits.Add(1)
	for idle := 0; f.on; {
		if t.pollLocked(nil) {
			idle = 0
			continue
		}
		if e.NDead.Load() != 0 || t.stopping.Load() {
			break
		}
		idle++
		if t.oversubscribed && idle%shmYieldEvery == 0 {
			// Still holding pollMu: no other goroutine of ours needs the rings meanwhile
			// (the background one keeps off them while we wait).
			sched.Yield()
		}
		if idle == shmFastPolls || (t.oversubscribed && idle == shmSharedSpinPolls) {
			spun = true
			break
		}
	}
	ok, st, err = f.done, f.st, f.err
	*f = fastRecv{} // keep no user memory alive
	t.pollMu.Unlock()
	t.leave()
	return ok, spun, st, err
}

// RecvNow serves an Irecv from the peer (world rank ws) whose message is the next record from
// that peer in the rings, as recvFast does a Recv but without a wait. It reports false, having
// taken nothing, where recvFast would, and when the next record is not that message (a
// record of another message is left where a later receive of it takes it straight).
func (p *shmPeer) RecvNow(ctx uint64, index map[int]int, patient bool, b []byte, ws, tag int) (bool, core.Status, error) {
	t := p.t
	if patient || t.stopping.Load() || !t.pollMu.TryLock() {
		return false, core.Status{}, nil
	}
	defer t.pollMu.Unlock()
	e := t.eng
	if t.closed.Load() || e.NDead.Load() != 0 || !(p.fin.Ready() || p.in.Ready()) {
		return false, core.Status{}, nil
	}
	f := fastRecv{on: true, src: ws, ctx: ctx, tag: tag, buf: b, rank: core.CommRank(index, ws)}
	rg, h, payload, ok, err := p.next()
	if err != nil || !ok || h.Type != wire.Eager || !f.takes(ws, h.Ctx, int(h.Tag)) || !e.FirstFor(ws, ctx, tag) {
		return false, core.Status{}, nil // a corrupt ring is the next poll's to report
	}
	f.deliver(int(h.Tag), payload)
	rg.Advance(h)
	return true, f.st, f.err
}

// RecvDirect is Recv from the shared-memory peer (world rank ws) with a reused receive
// operation, after recvFast where it applies. The caller checked the arguments.
//
// A receive from a shared-memory peer completes successfully only in its caller's goroutine
// (the message was queued already) or in a goroutine draining the rings, which holds pollMu
// throughout: once the waiter has seen it finished and taken pollMu once, no one touches the
// operation any more and it can serve the next receive. One that ended in error (a failure,
// completed elsewhere) is left to the garbage collector.
func (p *shmPeer) RecvDirect(ctx uint64, index map[int]int, patient bool, b []byte, ws, tag int) (bool, core.Status, error) {
	ok, spun, st, err := p.recvFast(ctx, patient, b, core.CommRank(index, ws), ws, tag)
	if ok {
		return true, st, err
	}
	t := p.t
	r := t.freeRecv.Swap(nil)
	if r == nil {
		r = &core.RecvOp{}
	}
	*r = core.RecvOp{Src: ws, Ctx: ctx, Tag: tag, Buf: b, Index: index}
	r.Req.Prog, r.Req.Patient, r.Req.Spun = t, patient, spun
	t.eng.Post(r)
	st, err = r.Req.Wait()
	if err == nil {
		t.pollMu.Lock()
		//lint:ignore SA2001 an empty critical section: waits out a poller still completing r
		t.pollMu.Unlock()
		r.Buf, r.Index = nil, nil // keep no user memory alive
		t.freeRecv.Store(r)
	}
	return true, st, err
}
