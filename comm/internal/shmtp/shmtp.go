//go:build linux || darwin

package shmtp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/sched"
	"github.com/gorun-hpc/gorun/comm/internal/shm"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// The shared-memory transport carries messages between ranks on one host through rings in
// shared segments (comm/internal/shm). Small messages are copied into the receiver's ring and out
// again (eager). Large ones are copied once: the receiver reads the sender's buffer directly
// with process_vm_readv (Linux CMA) and tells the sender it is done; where the kernel forbids
// that (ptrace policy, macOS), the sender streams the data through the ring in chunks after the
// receiver's clear-to-send. The TCP link that the bootstrap built to each local peer stays open
// as the liveness channel: a rank that dies closes it, and its heartbeats prove a silent rank
// alive, so no one waits on a dead peer's ring.
//
// Progress: a rank's incoming rings are drained by whichever goroutine gets there first: a
// goroutine waiting for a request polls them itself (no hand-off on the fast path), then sleeps
// on the segment's wake word (a futex on Linux) so that a long wait costs no CPU; a background
// goroutine takes short naps between polls for the traffic nobody waits for.

const (
	shmEagerLimit = shm.EagerLimit
	shmRingCap    = 1 << 20
	// Eager messages up to shmFastMax bytes go through the fastbox (comm/internal/shm) while the
	// ring is drained: a fastbox of shmFastCap bytes is a few hundred cache lines, which the
	// producer and the consumer keep in their caches, where each record of the ring's 1 MiB
	// lap comes from memory or a far cache.
	shmFastCap = 16 << 10
	shmFastMax = 1 << 10
	// A waiter with a core of its own polls this long before it sleeps: about what a
	// descheduled peer on a busy host takes to answer (a shorter spin turns each such delay
	// into a futex sleep and wake), and little against a wait that long. It does not yield
	// the core meanwhile: under another job's load, yielding lets the scheduler keep both
	// ranks of a ping-pong on one core.
	shmSpinTime = time.Millisecond
	// A waiter on a host with more ranks than cores polls this many times, yielding the core
	// every shmYieldEvery polls (its peer may need it), before it sleeps.
	shmSharedSpinPolls = 100
	// shmBusyNap: how long the background goroutine naps while waiters drive progress.
	shmBusyNap = 10 * time.Millisecond
	// shmIdleNapMax: the longest nap of the background goroutine while nothing comes (its
	// naps double from 20 us). Each wake takes a thread, and on a host whose cores all
	// compute, a core. Traffic nobody waits for waits that long at most (a waiter polls).
	shmIdleNapMax = 10 * time.Millisecond
	shmYieldEvery = 16
	// shmBellTimeout: the longest sleep of the background goroutine on the doorbell
	// (shm.Bell), a safety net only (every record rings it).
	shmBellTimeout = 50 * time.Millisecond
	// A patient waiter (Comm.Patient) leaves progress to the background goroutine asleep on
	// the doorbell, and blocks on its request's channel. Where there is no doorbell it naps
	// between polls, from shmPatientNapMin doubling to shmPatientNapMax. Never a sleep on the
	// wake word: a goroutine blocked in the futex syscall holds its processor, which the
	// runtime's monitor thread takes back after 20 us when no other is idle, and each such
	// hand-off sends the monitor into a millisecond of 20 us wake-ups, every one of which
	// preempts a computing thread on a host whose cores all compute.
	shmPatientNapMin = 20 * time.Microsecond
	shmPatientNapMax = time.Millisecond
)

// The protocol's size thresholds, by which comm's tests size their messages: EagerLimit, the
// largest message copied through the ring (larger ones go by rendezvous); FastMax, the
// largest that may take the fastbox; SplitMin, the smallest a waiting sender's receiver
// copies in two parts.
const (
	EagerLimit = shmEagerLimit
	FastMax    = shmFastMax
	SplitMin   = shmSplitMin
)

// Transport is the shared-memory transport of one rank (core.Transport, core.ProgressSource,
// core.Director).
type Transport struct {
	rank     int // this rank's, in the world
	eng      *core.Engine
	live     core.Liveness
	closeErr error                            // a send's error once the world is finalized
	logf     func(format string, args ...any) // the world's log
	seg      *shm.Segment                     // this rank's segment (the rings it consumes)
	peers    []*shmPeer
	active   []*shmPeer   // the peers that use shared memory
	pollMu   sync.Mutex   // one consumer of the incoming rings at a time
	segMu    sync.RWMutex // held (read) while touching this rank's mapping outside pollMu
	stop     chan struct{}
	done     chan struct{}
	stopping atomic.Bool
	// sleepers counts this process's goroutines asleep on the wake word, so that completing a
	// request costs nothing more while nobody sleeps.
	sleepers atomic.Int32
	// waiters counts goroutines polling in Wait: while there are any, the background
	// goroutine keeps off the rings (had it the poll lock when the OS preempted its thread,
	// every waiter would stall until it ran again).
	waiters atomic.Int32
	waits   atomic.Uint32 // waits begun, ever: the background goroutine's sign that waiters are active
	// waitersGone gets a token when the last waiter leaves while the background goroutine
	// blocks on it (bgBlocked), as it does while waiters drive progress.
	waitersGone chan struct{}
	bgBlocked   atomic.Bool
	// patients counts patient waiters blocked on their requests, which the background
	// goroutine completes; the first to come while it naps (bgNapping) wakes it (patientCame).
	patients    atomic.Int32
	patientCame chan struct{}
	bgNapping   atomic.Bool
	// bell: the doorbell the background goroutine sleeps on (nil: none; it naps).
	bell *shm.Bell
	// oversubscribed: ranks outnumber cores here, so a waiter spins briefly and yields (the
	// core may be the one its peer needs); else it spins for shmSpinTime without yielding.
	oversubscribed bool
	closed         atomic.Bool                 // mappings gone; set under pollMu
	probe          *uint64                     // a word peers read to test CMA
	freeRecv       atomic.Pointer[core.RecvOp] // a receive operation for the next blocking Recv (fast.go)
	fast           fastRecv                    // the blocking receive served without a Request (fast.go); under pollMu
}

type shmPeer struct {
	t    *Transport
	rank int
	pid  int
	seg  *shm.Segment // the peer's segment: we produce into out
	// bellFD: the write end of the peer's doorbell, -1 when it has none.
	bellFD int
	out    *shm.Ring
	in     *shm.Ring
	// fout and fin: the fastboxes we produce into and consume. A small eager message goes
	// into fout only while everything we put into out has been consumed (ringIdle, under
	// out.Mu), and the consumer takes fin's records before each of in's: so records of the
	// two reach the consumer in the order they were written.
	fout, fin *shm.Ring
	ringIdle  bool
	cma       bool

	core.Rendezvous                     // large messages in flight; its Mu also guards ctrl and pushes
	ctrl            []wire.Header       // control records waiting for room in out
	splits          map[uint64]shmSplit // receives copied half by each side, by receive id (under mu)
	pushes          []*shmPush          // fallback data streams waiting for room in out
	backlog         atomic.Bool         // ctrl or pushes may be non-empty: the pollers' cue to flush
}

// Split copies. When the sender of a large message waits for it (a blocking Send: it polls
// meanwhile, so it answers at once), the receiver copies the first part out of the sender's
// memory and the sender writes the rest into the receiver's buffer at the same time: two cores
// copy instead of one, while the other side would only have polled. The sender's RTS says that
// it waits (wire.FlagSenderWaits); the receiver's wire.Split names its buffer and where the
// sender's part begins; wire.Written says that part is in (or, wire.FlagSplitFailed, that the
// receiver must read it itself). The receiver sends wire.Fin once all of the message is in, as
// for a single copy, and only then does the send complete, so the sender's buffer stays valid
// throughout.
const (
	// shmSplitMin: smaller messages are copied by the receiver alone (the extra control
	// records cost more than half the copy saves).
	shmSplitMin = 256 << 10
)

// shmCMAWrite is shm.CMAWrite; tests replace it to take the path where it fails.
var shmCMAWrite = shm.CMAWrite

// shmSplit is a split receive's state at the receiver.
type shmSplit struct {
	sendID, addr, part uint64 // the sender's id and buffer address; where its part begins
}

// shmPush streams one large message's data through the ring (the fallback without CMA).
type shmPush struct {
	send *core.PendingSend
	recv uint64
	sent int
}

func (t *Transport) Send(dst int, ctx uint64, tag int, payload []byte, req *core.Request) {
	if t.stopping.Load() {
		req.Complete(core.Status{}, t.closeErr)
		return
	}
	p := t.peers[dst]
	if len(payload) <= shmEagerLimit {
		req.Complete(core.Status{}, p.writeBlocking(&wire.Header{Type: wire.Eager, Tag: int32(tag), Ctx: ctx, Length: uint64(len(payload))}, payload))
		return
	}
	p.sendRTS(ctx, tag, payload, req, 0)
}

// sendRTS starts a large send: registers it and tells the receiver where the data is.
func (p *shmPeer) sendRTS(ctx uint64, tag int, payload []byte, req *core.Request, flags uint8) {
	id, err := p.AddSend(payload, req)
	if err != nil {
		req.Complete(core.Status{}, err)
		return
	}
	// The RTS carries the buffer's address for a receiver that reads it directly.
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(payload))))
	if err := p.writeBlocking(&wire.Header{Type: wire.RTS, Flags: flags, Tag: int32(tag), Ctx: ctx, Length: uint64(len(payload)), ID: id, Offset: addr}, nil); err != nil {
		p.TakeSend(id)
		req.Complete(core.Status{}, err)
	}
}

// writeBlocking appends a record to the peer's ring, waiting (spin, then sleep) while it is
// full; the peer's consumer always drains, so the wait ends unless the peer dies.
func (p *shmPeer) writeBlocking(h *wire.Header, payload []byte) error {
	for spins := 0; ; spins++ {
		p.out.Mu.Lock()
		ok := p.put(h, payload)
		p.out.Mu.Unlock()
		if ok {
			p.wakePeer()
			return nil
		}
		if err := p.failure(); err != nil {
			return err
		}
		// While we wait for room, our own rings may hold what the peer needs from us first.
		p.t.PollOnce()
		p.wakePeer()
		backoff(spins)
	}
}

// put appends a record to the fastbox or the ring, or reports false when it fits neither.
// The caller holds out.Mu.
func (p *shmPeer) put(h *wire.Header, payload []byte) bool {
	if h.Type == wire.Eager && len(payload) <= shmFastMax {
		if !p.ringIdle {
			// One load of the consumer's head (its line moves here) while the ring is busy.
			p.ringIdle = p.out.Drained()
		}
		if p.ringIdle && p.fout.TryWrite(h, payload) {
			return true
		}
	}
	return p.ringWrite(h, payload)
}

// ringWrite appends a record to the ring (not the fastbox); the caller holds out.Mu.
func (p *shmPeer) ringWrite(h *wire.Header, payload []byte) bool {
	if !p.out.TryWrite(h, payload) {
		return false
	}
	p.ringIdle = false
	return true
}

// next returns the next incoming record from the peer and the ring or fastbox it is in: the
// fastbox's first. A record in the ring waits while the fastbox holds any: those were
// written before it (see fout). The caller holds pollMu.
func (p *shmPeer) next() (r *shm.Ring, h wire.Header, payload []byte, ok bool, err error) {
	if p.fin.Ready() {
		h, payload, ok, err = p.fin.Peek()
		if ok || err != nil {
			return p.fin, h, payload, ok, err
		}
	}
	h, payload, ok, err = p.in.Peek()
	if ok && p.fin.Ready() {
		// A fastbox record stamped before this one became visible after the first look.
		h, payload, ok, err = p.fin.Peek()
		return p.fin, h, payload, ok, err
	}
	return p.in, h, payload, ok, err
}

func backoff(spins int) {
	switch {
	case spins < 100:
	case spins < 1000:
		runtime.Gosched()
	default:
		time.Sleep(time.Duration(min(spins/1000, 50)) * 20 * time.Microsecond)
	}
}

// wakePeer wakes the peer's goroutines asleep on its wake word or its doorbell, if any. The
// record's stamp was stored (sequentially consistent) before the sleep count and the bell word
// are read, and a sleeper counts itself (arms the bell) before it last looks at its rings:
// either it sees the record or we see it.
func (p *shmPeer) wakePeer() {
	if atomic.LoadUint32(p.seg.Sleep) != 0 {
		atomic.AddUint32(p.seg.Wake, 1)
		shm.FutexWake(p.seg.Wake)
	}
	if p.bellFD >= 0 && atomic.LoadUint32(p.seg.Bell) != 0 && atomic.CompareAndSwapUint32(p.seg.Bell, 1, 0) {
		shm.RingFD(p.bellFD)
	}
}

func (p *shmPeer) failure() error {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return p.Rendezvous.LinkError()
}

// flush writes pending control records and fallback data chunks as far as the ring has room.
// It never waits, so the goroutine draining our rings never blocks on the peer.
func (p *shmPeer) flush() bool {
	if !p.backlog.Load() {
		return false
	}
	p.Mu.Lock()
	if len(p.ctrl) == 0 && len(p.pushes) == 0 {
		p.backlog.Store(false)
		p.Mu.Unlock()
		return false
	}
	did := false
	p.out.Mu.Lock()
	for len(p.ctrl) > 0 && p.ringWrite(&p.ctrl[0], nil) {
		p.ctrl = p.ctrl[1:]
		did = true
	}
	var finished []*shmPush
	chunk := p.out.MaxRecord() - shm.RecordHeader
	for len(p.ctrl) == 0 && len(p.pushes) > 0 {
		s := p.pushes[0]
		data := s.send.Payload
		end := min(s.sent+chunk, len(data))
		if !p.ringWrite(&wire.Header{Type: wire.Data, Length: uint64(end - s.sent), ID: s.recv, Offset: uint64(s.sent)}, data[s.sent:end]) {
			break
		}
		did = true
		s.sent = end
		if s.sent == len(data) {
			finished = append(finished, s)
			p.pushes = p.pushes[1:]
		}
	}
	p.out.Mu.Unlock()
	if len(p.ctrl) == 0 && len(p.pushes) == 0 {
		p.backlog.Store(false)
	}
	p.Mu.Unlock()
	if did {
		p.wakePeer()
	}
	for _, s := range finished {
		s.send.Req.Complete(core.Status{}, nil)
	}
	return did
}

func (p *shmPeer) queueCtrl(h wire.Header) {
	p.Mu.Lock()
	p.ctrl = append(p.ctrl, h)
	p.backlog.Store(true)
	p.Mu.Unlock()
	p.flush()
}

// PollOnce drains what it can of every incoming ring and flushes outgoing control; it reports
// whether anything happened. Only one goroutine polls at a time; others return at once.
func (t *Transport) PollOnce() bool { return t.pollFor(nil) }

// pollFor is PollOnce for a waiter on r: the pass ends once r is finished, leaving the records
// behind r's in the rings, where the receives their owner posts next take them straight (a
// record drained ahead of its receive is queued, which allocates and copies it).
func (t *Transport) pollFor(r *core.Request) bool {
	if !t.pollMu.TryLock() {
		return false
	}
	did := t.pollLocked(r)
	t.pollMu.Unlock()
	return did
}

// pollLocked drains the rings as PollOnce, ending early once r (when not nil) is finished or
// the fast receive is served; the caller holds pollMu.
func (t *Transport) pollLocked(r *core.Request) bool {
	if t.closed.Load() {
		return false
	}
	did := false
	for _, p := range t.active {
		if p.flush() {
			did = true
		}
		for n := 0; n < 64; n++ {
			rg, h, payload, ok, err := p.next()
			if err != nil {
				t.logf("gorun: rank %d: corrupt shared-memory ring from rank %d: %v; closing the link", t.rank, p.rank, err)
				p.broken(fmt.Errorf("corrupt shared-memory ring: %w", err))
				break
			}
			if !ok {
				break
			}
			p.handle(h, payload)
			rg.Advance(h)
			did = true
			if t.fast.done || (r != nil && r.Finished()) {
				// The waiting receive is served: the rest can wait for its next call.
				return true
			}
		}
	}
	return did
}

// handle processes one incoming record. payload points into the ring and is only valid until
// the record is consumed, so everything that keeps it copies it.
func (p *shmPeer) handle(h wire.Header, payload []byte) {
	eng := p.t.eng
	switch h.Type {
	case wire.Eager:
		if f := &p.t.fast; f.on && f.takes(p.rank, h.Ctx, int(h.Tag)) {
			f.deliver(int(h.Tag), payload)
			return
		}
		eng.ArriveCopy(p.rank, h.Ctx, int(h.Tag), payload)
	case wire.RTS:
		if f := &p.t.fast; f.on && f.takes(p.rank, h.Ctx, int(h.Tag)) {
			f.on = false // a large message: the receive takes the general path
		}
		sendID, tag, size, addr := h.ID, int(h.Tag), h.Length, h.Offset
		waits := h.Flags&wire.FlagSenderWaits != 0
		r, _ := eng.Arrive(p.rank, h.Ctx, tag, int(size), func(m *core.InMsg) {
			m.Fetch = func(r *core.RecvOp) { p.acceptRTS(sendID, addr, r, tag, size, waits) }
		})
		if r != nil {
			p.acceptRTS(sendID, addr, r, tag, size, waits)
		}
	case wire.Split:
		p.Mu.Lock()
		s := p.Sends[h.ID]
		p.Mu.Unlock()
		if s == nil || h.Length == 0 || h.Length >= uint64(len(s.Payload)) {
			p.protocolError(fmt.Errorf("split copy of unknown message %d (from byte %d)", h.ID, h.Length))
			return
		}
		part := s.Payload[h.Length:]
		w := wire.Header{Type: wire.Written, ID: h.Ctx, Length: uint64(len(part))}
		if shmCMAWrite(p.pid, h.Offset+h.Length, part) != nil {
			w.Flags = wire.FlagSplitFailed
		}
		p.queueCtrl(w)
	case wire.Written:
		p.Mu.Lock()
		sp, ok := p.splits[h.ID]
		pr := p.Recvs[h.ID]
		p.Mu.Unlock()
		if !ok || pr == nil || h.Length != pr.Size-sp.part {
			p.protocolError(fmt.Errorf("split copy for unknown receive %d", h.ID))
			return
		}
		if h.Flags&wire.FlagSplitFailed != 0 {
			// The sender's buffer stays put until our wire.Fin: read its part ourselves.
			if err := shm.CMARead(p.pid, sp.addr+sp.part, pr.Buf[sp.part:pr.Size]); err != nil {
				p.broken(fmt.Errorf("reading rank %d's message: %w", p.rank, err))
				return
			}
		}
		p.splitDone(h.ID, h.Length)
	case wire.CTS:
		s := p.TakeSend(h.ID)
		if s != nil && h.Flags&wire.FlagDiscard == 0 {
			p.Mu.Lock()
			p.pushes = append(p.pushes, &shmPush{send: s, recv: h.Offset})
			p.backlog.Store(true)
			p.Mu.Unlock()
		}
		if s == nil {
			p.protocolError(fmt.Errorf("clear-to-send for unknown message %d", h.ID))
		} else if h.Flags&wire.FlagDiscard != 0 {
			s.Req.Complete(core.Status{}, nil)
		}
	case wire.Fin:
		s := p.TakeSend(h.ID)
		if s == nil {
			p.protocolError(fmt.Errorf("completion for unknown message %d", h.ID))
			return
		}
		s.Req.Complete(core.Status{}, nil)
	case wire.Data:
		pr := p.Recv(h.ID)
		if pr == nil || h.Offset != pr.Got || h.Offset+h.Length > pr.Size {
			p.protocolError(fmt.Errorf("unexpected data for receive %d at offset %d", h.ID, h.Offset))
			return
		}
		copy(pr.Buf[h.Offset:], payload)
		p.GotData(h.ID, pr, h.Length)
	default:
		p.protocolError(fmt.Errorf("record type %d", h.Type))
	}
}

// acceptRTS runs when a receive matches a large message: read it straight from the sender's
// memory where the kernel allows, else ask the sender to stream it.
func (p *shmPeer) acceptRTS(sendID, addr uint64, r *core.RecvOp, tag int, size uint64, senderWaits bool) {
	dst, terr := r.Target(p.rank, tag, int(size))
	if terr != nil {
		p.queueCtrl(wire.Header{Type: wire.CTS, Flags: wire.FlagDiscard, ID: sendID})
		r.Req.Complete(r.Status(p.rank, tag, int(size)), terr)
		return
	}
	// With more ranks than cores the sender may not be running to copy its part (nor is
	// there a core for two copies at once): then the receiver copies alone.
	if p.cma && senderWaits && size >= shmSplitMin && !p.t.oversubscribed {
		p.acceptSplit(sendID, addr, r, tag, size, dst)
		return
	}
	if p.cma {
		if err := shm.CMARead(p.pid, addr, dst); err == nil {
			p.queueCtrl(wire.Header{Type: wire.Fin, ID: sendID})
			r.Req.Complete(r.Status(p.rank, tag, int(size)), nil)
			return
		}
		p.cma = false // e.g. the policy changed: stream from now on
	}
	rid, err := p.AddRecv(&core.PendingRecv{Op: r, Buf: dst, Size: size, Src: p.rank, Tag: tag})
	if err != nil {
		r.Req.Complete(core.Status{}, err)
		return
	}
	p.queueCtrl(wire.Header{Type: wire.CTS, ID: sendID, Offset: rid})
}

// acceptSplit takes a large message from a waiting sender by a split copy (see wire.Split).
func (p *shmPeer) acceptSplit(sendID, addr uint64, r *core.RecvOp, tag int, size uint64, dst []byte) {
	part := size / 2 &^ 4095 // the sender's part starts on a page
	rid, err := p.AddRecv(&core.PendingRecv{Op: r, Buf: dst, Size: size, Src: p.rank, Tag: tag})
	if err != nil {
		r.Req.Complete(core.Status{}, err)
		return
	}
	p.Mu.Lock()
	p.splits[rid] = shmSplit{sendID: sendID, addr: addr, part: part}
	p.Mu.Unlock()
	p.queueCtrl(wire.Header{Type: wire.Split, ID: sendID, Ctx: rid, Offset: uint64(uintptr(unsafe.Pointer(&dst[0]))), Length: part})
	if err := shm.CMARead(p.pid, addr, dst[:part]); err != nil {
		p.broken(fmt.Errorf("reading rank %d's message: %w", p.rank, err))
		return
	}
	p.splitDone(rid, part)
}

// splitDone counts n more bytes of split receive rid in; once all are, the receive completes
// and the sender hears that its buffer is free.
func (p *shmPeer) splitDone(rid, n uint64) {
	p.Mu.Lock()
	pr := p.Recvs[rid]
	if pr == nil { // the link failed meanwhile, and the receive with it
		p.Mu.Unlock()
		return
	}
	pr.Got += n
	if pr.Got < pr.Size {
		p.Mu.Unlock()
		return
	}
	sp := p.splits[rid]
	delete(p.Recvs, rid)
	delete(p.splits, rid)
	p.Mu.Unlock()
	p.queueCtrl(wire.Header{Type: wire.Fin, ID: sp.sendID})
	pr.Op.Req.Complete(pr.Op.Status(p.rank, pr.Tag, int(pr.Size)), nil)
}

func (p *shmPeer) protocolError(err error) {
	p.t.logf("gorun: rank %d: protocol error from rank %d over shared memory: %v; closing the link", p.t.rank, p.rank, err)
	p.broken(fmt.Errorf("protocol error: %w", err))
}

// fail ends the shared-memory link once, failing what was pending with the peer, and reports
// the peer lost to the world (core.Liveness.Lose, which tells the TCP liveness link, and calls fail again when the
// loss was found elsewhere: a no-op).
func (p *shmPeer) fail(cause error) {
	if p.failure() != nil {
		return // broken already (it reports the loss, which calls here again, maybe under pollMu)
	}
	p.drain()
	p.broken(cause)
}

// broken is fail without the drain, for a link found broken by its reader: a corrupt ring, a
// protocol error or a failed copy of the peer's memory. Those are found while pollMu is held
// (drain would take it again) or on a posted receive's fetch, and after them the ring's
// remaining records cannot be trusted anyway.
func (p *shmPeer) broken(cause error) {
	p.Mu.Lock()
	sends, recvs, first := p.MarkFailed(cause)
	if !first {
		p.Mu.Unlock()
		return
	}
	pushes := p.pushes
	p.pushes, p.ctrl = nil, nil
	p.Mu.Unlock()
	p.FailPending(cause, sends, recvs)
	for _, s := range pushes {
		s.send.Req.Complete(core.Status{}, &core.PeerError{Rank: p.rank, Err: cause})
	}
	p.t.live.Lose(p.rank, cause)
}

// PeerLost ends the link to a peer the world found lost (core.Liveness).
func (t *Transport) PeerLost(rank int, cause error) {
	if p := t.peers[rank]; p != nil {
		p.fail(cause)
	}
}

// Finalize and Abandon unmap the segments; what peers wrote before is drained as they fail.
func (t *Transport) Finalize() error { t.shutdown(); return nil }
func (t *Transport) Abandon(error)   { t.shutdown() }

// DirectTo is the link to rank for blocking messages without a Request (fast.go).
func (t *Transport) DirectTo(rank int) core.DirectLink {
	if p := t.peers[rank]; p != nil {
		return p
	}
	return nil
}

// drain takes every whole record the peer left in our ring: messages it sent before it
// finalized (or died) are still delivered, as over TCP.
func (p *shmPeer) drain() {
	t := p.t
	t.pollMu.Lock()
	defer t.pollMu.Unlock()
	if t.closed.Load() {
		return
	}
	p.Mu.Lock()
	failed := p.Failed != nil
	p.Mu.Unlock()
	for !failed {
		r, h, payload, ok, err := p.next()
		if err != nil || !ok {
			return
		}
		p.handle(h, payload)
		r.Advance(h)
	}
}

// progressLoop drains the rings when no waiter does (a rank computing while messages for it
// arrive, or its Isend waiting for the receiver's answer).
func (t *Transport) progressLoop() {
	defer close(t.done)
	nap := 20 * time.Microsecond
	lastWaits := t.waits.Load()
	busyNap := time.NewTimer(shmBusyNap)
	defer busyNap.Stop()
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		// While ranks wait (now, or since the last nap) their waiters poll: every wake of this
		// goroutine would take a thread, and on a busy host a core, from them or their peers.
		// It sleeps until the last waiter leaves, then naps (waits come in bursts), unless a
		// patient waiter depends on it (one that comes meanwhile ends the nap).
		if t.waiters.Load() > 0 || t.waits.Load() != lastWaits {
			// Swaps, not Stores, before the loads that follow (the other side adds, then
			// loads): a read-modify-write keeps the load after it under qemu-user's arm64
			// emulation on x86 hosts too (see core.Request.Complete).
			t.bgBlocked.Swap(true)
			if t.waiters.Load() > 0 {
				select {
				case <-t.stop:
					return
				case <-t.waitersGone:
				}
			}
			t.bgBlocked.Store(false)
			lastWaits = t.waits.Load()
			t.bgNapping.Swap(true)
			if t.patients.Load() == 0 {
				busyNap.Reset(shmBusyNap)
				select {
				case <-t.stop:
					return
				case <-t.patientCame:
				case <-busyNap.C:
				}
			}
			t.bgNapping.Store(false)
			if t.patients.Load() == 0 {
				continue
			}
		}
		if t.PollOnce() {
			nap = 20 * time.Microsecond
			continue
		}
		// Neither spinning (this goroutine runs beside the rank's computation) nor a futex
		// sleep (a goroutine blocked in that syscall would cost every message a futex wake
		// and the runtime a processor hand-off): the doorbell, else short naps, growing while
		// nothing comes.
		if t.bellSleep() {
			continue
		}
		time.Sleep(nap)
		nap = min(2*nap, shmIdleNapMax)
	}
}

// pending reports whether an incoming ring has a record (ready) and whether records wait to be
// flushed into a peer's ring (backlog). The caller holds pollMu (the consumer's positions are
// its).
func (t *Transport) pending() (ready, backlog bool) {
	for _, p := range t.active {
		ready = ready || p.in.Ready() || p.fin.Ready()
		backlog = backlog || p.backlog.Load()
	}
	return ready, backlog
}

// quiet reports that nothing is pending; the caller holds pollMu.
func (t *Transport) quiet() bool {
	ready, backlog := t.pending()
	return !ready && !backlog
}

// sleep waits on the segment's wake word until a producer, or a completion elsewhere in this
// process, bumps it (or the timeout passes), unless there is work already or r is done. The
// sleep counts (in the segment for producers, in the process for completions) are raised
// before the last look, so whoever adds work afterwards sees them and issues the futex wake.
func (t *Transport) sleep(r *core.Request, timeout time.Duration) {
	t.segMu.RLock()
	defer t.segMu.RUnlock()
	if t.closed.Load() {
		return
	}
	seq := atomic.LoadUint32(t.seg.Wake)
	atomic.AddUint32(t.seg.Sleep, 1)
	t.sleepers.Add(1)
	// Another goroutine polling now will complete what it finds; look again later.
	if t.pollMu.TryLock() {
		quiet := t.quiet()
		t.pollMu.Unlock()
		if quiet && (r == nil || !r.Finished()) {
			shm.FutexWait(t.seg.Wake, seq, timeout)
		}
	}
	t.sleepers.Add(-1)
	atomic.AddUint32(t.seg.Sleep, ^uint32(0))
}

// Poll drives progress while the caller waits for r: it drains the rings itself (no hand-off
// to another goroutine on the fast path), yields the core now and then (the peer may need it),
// and after a while sleeps on the wake word, so a long wait costs no CPU. A patient request
// leaves progress to the background goroutine instead, or naps between polls where there is
// no doorbell (see shmPatientNapMax).
func (t *Transport) Poll(r *core.Request) {
	if r.Patient && t.bell != nil {
		// Not counted as a waiter: the background goroutine keeps the rings.
		if t.patients.Add(1) == 1 && t.bgNapping.Load() {
			select {
			case t.patientCame <- struct{}{}:
			default:
			}
		}
		t.PollOnce()
		if !r.Finished() {
			<-r.Done()
		}
		t.patients.Add(-1)
		return
	}
	t.waiters.Add(1)
	t.waits.Add(1)
	defer t.leave()
	idle := 0 // polls in a row that found nothing
	if r.Spun && t.oversubscribed {
		idle = shmSharedSpinPolls - 1 // its spin is spent: one more look, then sleep
	}
	var idleSince time.Time
	nap := shmPatientNapMin
	for !r.Finished() && !t.stopping.Load() {
		if t.pollFor(r) {
			idle, nap = 0, shmPatientNapMin
			continue
		}
		idle++
		switch {
		case r.Patient:
			time.Sleep(nap)
			nap = min(2*nap, shmPatientNapMax)
			continue
		case t.oversubscribed:
			if idle%shmYieldEvery == 0 {
				sched.Yield()
			}
			if idle < shmSharedSpinPolls {
				continue
			}
		case idle < 1<<20:
			// The clock is read only now and then, and not in the first polls at all (most
			// waits end there).
			if idle%256 != 0 {
				continue
			}
			if idle == 256 {
				idleSince = time.Now()
				continue
			}
			if time.Since(idleSince) < shmSpinTime {
				continue
			}
			idle = 1 << 20 // until something comes, sleep again after every wake
		}
		// Requests completed outside this loop (by TCP, or a failure) kick the word; the
		// timeout is only a safety net.
		t.sleep(r, 10*time.Millisecond)
	}
}

// leave ends a wait in poll; the last waiter out hands progress back to the background
// goroutine.
func (t *Transport) leave() {
	if t.waiters.Add(-1) == 0 && t.bgBlocked.Load() {
		select {
		case t.waitersGone <- struct{}{}:
		default:
		}
	}
}

// bellSleep is the background goroutine's sleep on the doorbell: it arms the bell, looks at
// the rings a last time and sleeps until a record rings it (or shmBellTimeout passes). It
// reports whether to look at the rings again at once (it slept, or a record is there); false
// asks the caller to nap: there is no bell, another goroutine polls (a record it has passed
// by may have come before the bell was armed), or records wait for room in a peer's ring (no
// one rings when the peer makes room).
func (t *Transport) bellSleep() bool {
	if t.bell == nil {
		return false
	}
	t.segMu.RLock()
	if t.closed.Load() {
		t.segMu.RUnlock()
		return false
	}
	atomic.StoreUint32(t.seg.Bell, 1)
	polled, ready, backlog := t.pollMu.TryLock(), false, false
	if polled {
		ready, backlog = t.pending()
		t.pollMu.Unlock()
	}
	// Not held across the sleep: shutdown takes it to unmap, after it rang.
	t.segMu.RUnlock()
	again := ready || t.stopping.Load()
	if polled && !ready && !backlog && !t.stopping.Load() {
		again = t.bell.Wait(shmBellTimeout)
	}
	t.segMu.RLock()
	if !t.closed.Load() {
		atomic.StoreUint32(t.seg.Bell, 0)
	}
	t.segMu.RUnlock()
	return again
}

// Kick wakes this process's waiters sleeping on its segment's wake word.
func (t *Transport) Kick() {
	if t.sleepers.Load() == 0 {
		return
	}
	t.segMu.RLock()
	defer t.segMu.RUnlock()
	if t.closed.Load() {
		return
	}
	atomic.AddUint32(t.seg.Wake, 1)
	if atomic.LoadUint32(t.seg.Sleep) != 0 {
		shm.FutexWake(t.seg.Wake)
	}
}

func (t *Transport) shutdown() {
	if t.stopping.Swap(true) {
		return
	}
	close(t.stop)
	atomic.AddUint32(t.seg.Wake, 1)
	shm.FutexWake(t.seg.Wake)
	if t.bell != nil {
		t.bell.Ring()
	}
	<-t.done
	// Peers may still be reading what we wrote into their segments: only the mappings go.
	// pollMu first: its holder may kick (segMu read) while completing requests.
	t.pollMu.Lock()
	t.segMu.Lock()
	defer t.segMu.Unlock()
	t.closed.Store(true)
	for _, p := range t.active {
		p.seg.Close()
		if p.bellFD >= 0 {
			unix.Close(p.bellFD)
		}
	}
	t.seg.Close()
	t.pollMu.Unlock()
	if t.bell != nil {
		t.bell.Close() // its sleeper, the background goroutine, has returned
	}
}

var errNoShm = errors.New("no shared-memory peers")

// setupShm connects this rank to the peers on its host through shared memory, using the
// already-built TCP links to agree on segments. It returns nil, errNoShm when no peer shares
// the host.
func setupShm(b *core.Setup) (*Transport, error) {
	id, table, jobHash := b.ID, b.Table, b.JobHash
	me := table[b.Rank]
	var local []int
	for r, info := range table {
		if r != b.Rank && info.HostID == me.HostID {
			local = append(local, r)
		}
	}
	if len(local) == 0 {
		// Segment names are unlinked after a world-wide exchange (below): a rank alone on its
		// host still joins it when some other host has several ranks, or they would wait forever.
		if hostShared(table) {
			if _, err := b.Channel(shmSetupSpace).AllgatherPair(0, 0, 1); err != nil {
				return nil, fmt.Errorf("comm: rank %d: shared-memory setup: %w", b.Rank, err)
			}
		}
		return nil, errNoShm
	}
	shm.AllowCMA()
	seg, err := shm.CreateSegment(id.JobID, b.Rank, local, shmRingCap, shmFastCap, jobHash)
	if err != nil {
		return nil, err
	}
	t := &Transport{rank: b.Rank, eng: b.Eng, live: b.Live, closeErr: b.Closed, logf: b.Logf, seg: seg, peers: make([]*shmPeer, b.Size), stop: make(chan struct{}), done: make(chan struct{}),
		waitersGone: make(chan struct{}, 1), patientCame: make(chan struct{}, 1), bell: shm.CreateBell(seg.Path)}
	t.oversubscribed = id.Oversubscribed || len(local)+1 > runtime.NumCPU()
	probe := new(uint64)
	*probe = 0x676f72756e636d61 ^ uint64(os.Getpid())
	t.probe = probe
	setup := b.Channel(shmSetupSpace)
	type shmInfo struct {
		Path  string `msgpack:"path"`
		PID   int    `msgpack:"pid"`
		Probe uint64 `msgpack:"probe"`
		Want  uint64 `msgpack:"want"`
		Bell  string `msgpack:"bell"` // the doorbell's path; empty: none
	}
	removeNames := func() {
		os.Remove(seg.Path)
		if t.bell != nil {
			os.Remove(t.bell.Path)
		}
	}
	fail := func(err error) (*Transport, error) {
		removeNames()
		for _, p := range t.active {
			p.seg.Close()
			if p.bellFD >= 0 {
				unix.Close(p.bellFD)
			}
		}
		seg.Close()
		if t.bell != nil {
			t.bell.Close()
		}
		return nil, err
	}
	mine := shmInfo{Path: seg.Path, PID: os.Getpid(), Probe: uint64(uintptr(unsafe.Pointer(probe))), Want: *probe}
	if t.bell != nil {
		mine.Bell = t.bell.Path
	}
	ringsAll := int64(1) // whether we can ring every local peer that has a bell
	enc, err := msgpack.Marshal(mine)
	if err != nil {
		return fail(fmt.Errorf("comm: rank %d: shared-memory setup: %w", b.Rank, err))
	}
	infos, err := setup.Exchange(local, enc)
	if err != nil {
		return fail(fmt.Errorf("comm: rank %d: shared-memory setup %w", b.Rank, err))
	}
	for i, r := range local {
		var info shmInfo
		if err := msgpack.Unmarshal(infos[i], &info); err != nil {
			return fail(fmt.Errorf("comm: rank %d: shared-memory setup with rank %d: %w", b.Rank, r, err))
		}
		pseg, err := shm.OpenSegment(info.Path, info.PID, jobHash)
		if err != nil {
			return fail(fmt.Errorf("comm: rank %d: rank %d's segment: %w", b.Rank, r, err))
		}
		out, fout, err := pseg.RingFrom(b.Rank)
		if err != nil {
			pseg.Close()
			return fail(err)
		}
		in, fin, err := seg.RingFrom(r)
		if err != nil {
			pseg.Close()
			return fail(err)
		}
		p := &shmPeer{t: t, rank: r, pid: info.PID, seg: pseg, out: out, in: in, fout: fout, fin: fin, Rendezvous: core.NewRendezvous(r), splits: map[uint64]shmSplit{}, bellFD: -1}
		if info.Bell != "" {
			if fd, err := shm.OpenPeerBell(info.Bell, pseg.Path); err == nil {
				p.bellFD = fd
			} else {
				ringsAll = 0
			}
		}
		var word [8]byte
		p.cma = shm.CMARead(info.PID, info.Probe, word[:]) == nil && *(*uint64)(unsafe.Pointer(&word[0])) == info.Want
		t.peers[r] = p
		t.active = append(t.active, p)
	}
	// Everyone has mapped everything it needs: the file names can go. A rank keeps its
	// doorbell only if every local peer can ring it (else it would sleep through their
	// records); the others never arm theirs.
	all, err := setup.AllgatherPair(ringsAll, 0, 1)
	if err != nil {
		return fail(fmt.Errorf("comm: rank %d: shared-memory setup: %w", b.Rank, err))
	}
	removeNames()
	for _, r := range local {
		if all[2*r] == 0 && t.bell != nil {
			t.bell.Close()
			t.bell = nil
		}
	}
	runtime.KeepAlive(probe)
	go t.progressLoop()
	return t, nil
}

// hostShared reports whether any two ranks of the table share a host.
func hostShared(table []boot.RankInfo) bool {
	seen := make(map[string]bool, len(table))
	for _, info := range table {
		if seen[info.HostID] {
			return true
		}
		seen[info.HostID] = true
	}
	return false
}

// shmSetupSpace names the message space of the shared-memory setup (core.Setup.Channel).
const shmSetupSpace = 0x5348 // "SH"
