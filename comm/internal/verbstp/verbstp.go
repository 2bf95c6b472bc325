package verbstp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/internal/sched"

	"github.com/gorun-hpc/gorun/comm/internal/verbs"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// The verbs transport moves messages over RDMA queue pairs (libibverbs: InfiniBand, RoCE,
// Apple's Thunderbolt RDMA; or the software device in tests), one connected QP per peer. The TCP
// mesh the bootstrap built stays as the liveness channel, as for shared memory: a rank that dies
// closes it, and a verbs link that fails closes it, so both ends learn within bounded time.
//
// Protocol, the same on RC and UC queue pairs:
//   - Every message is a SEND into one of the receiver's pre-posted, pre-registered buffers
//     (verbsCredits per peer). A sender holds one credit per buffer; the receiver returns credits
//     by RDMA-writing how many messages it has taken into a word of the sender's registered
//     control region, so credit returns never need a receive buffer themselves.
//   - Each SEND carries a sequence number. On UC, where the adapter drops a damaged message
//     silently, a gap is detected by the next message, and a lost last message by the missing
//     acknowledgement (the credit word stops moving while messages are outstanding): either ends
//     the link with an error naming the peer, within the peer timeout. The credit word is
//     rewritten periodically on UC, since that write can be lost too.
//   - Small messages travel whole (eager). Large ones use request-to-send / clear-to-send: on RC
//     the receiver's buffer is registered (through a registration cache) and the sender writes
//     straight into it with RDMA WRITE, the last chunk WITH_IMM naming the receive; on UC (where
//     a lost WRITE would leave a hole nobody notices) the data is pipelined through the staging
//     buffers as sequenced SENDs, as many in flight as there are credits.
//   - Every completion's status is checked; a failure ends the link with an error naming the
//     peer and the verbs status, and nothing more is posted on that queue pair.
//
// Progress: one lock guards the queue pairs. A goroutine waiting for a request polls the
// completion queue itself for a while, then naps; a background goroutine polls with naps of up
// to a millisecond for the traffic nobody waits for, and runs the timers.

const (
	verbsSlot      = 32 << 10 // one registered buffer: header + an eager message or a data chunk
	verbsHdrSize   = wire.HeaderSize + 8
	verbsEagerMax  = verbsSlot - verbsHdrSize
	verbsCredits   = 32 // receive buffers per peer
	verbsStaging   = 32 // send staging buffers per peer
	verbsMaxWrites = 8  // zero-copy RDMA WRITEs in flight per peer
	verbsSendDepth = verbsStaging + verbsMaxWrites + 2
	verbsZCMin     = 256 << 10 // smaller rendezvous messages are staged even on RC
	verbsCtsZCLen  = 12        // a zero-copy CTS carries the buffer's address and rkey
)

// Work request ids: kind << 56 | peer << 32 | index.
const (
	wrRecv = iota + 1
	wrSend
	wrCredit
	wrWrite
)

func wrID(kind, peer int, idx uint32) uint64 {
	return uint64(kind)<<56 | uint64(peer)<<32 | uint64(idx)
}

// Transport is the verbs transport of one rank (core.Transport, core.Progressor).
type Transport struct {
	rank     int // this rank's, in the world
	eng      *core.Engine
	live     core.Liveness
	closeErr error                            // a send's error once the world is finalized
	logf     func(format string, args ...any) // the world's log
	// oversubscribed: ranks outnumber cores on this host, so a waiter yields the core while
	// it spins (the core may be the one a peer here needs).
	oversubscribed bool
	devs           []*verbsDev
	typ            ibv.QPType
	timeout        time.Duration
	peers          []*verbsPeer
	active         []*verbsPeer

	// Registered (with every device) as a whole; each peer uses its own slots and words.
	recvBuf, sendBuf, ctrlBuf, credBuf []byte

	mu     sync.Mutex // the queue pairs, the CQ and everything below
	wcs    []ibv.WC
	nextZC uint32

	qmu      sync.Mutex    // outgoing queues (senders do not wait for mu)
	accepts  []verbsAccept // receives matched with a large message, waiting for a CTS; under qmu
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopping atomic.Bool
	closed   bool
}

// verbsDev is one opened device with what hangs off it. Several serve a rank whose peers sit
// behind different adapters or cables (a Thunderbolt mesh: one device per cable).
type verbsDev struct {
	dev                            ibv.Device
	port                           int
	pattr                          ibv.PortAttr
	gids                           []ibv.GIDEntry
	pd                             ibv.PD
	cq                             ibv.CQ
	cache                          *verbs.RegCache
	recvMR, sendMR, ctrlMR, credMR ibv.MR
	writeChunk                     int
	peers                          int
}

type verbsPeer struct {
	t    *Transport
	d    *verbsDev
	rank int
	qp   ibv.QP
	core.Rendezvous

	outq []*verbsOut // guarded by t.qmu

	// Guarded by t.mu.
	pend       []*verbsOut
	pushes     []*verbsPush
	zcs        []*verbsZC
	zcRecvs    map[uint32]uint64          // immediate -> receive id
	zcRegs     map[uint64]*verbs.RegEntry // receive id -> its registered buffer
	freeSlots  []uint32
	sqUsed     int
	sent       uint64 // messages posted (each takes one of the peer's receive buffers)
	taken      uint64 // messages received from the peer
	seqOut     uint32
	seqIn      uint32
	acked      uint64 // last credit word seen
	ackAt      time.Time
	creditBusy bool
	creditAt   time.Time
	remoteCtrl uint64
	remoteKey  uint32
	abandoned  bool
	localPSN   uint32
}

type verbsOut struct {
	h     wire.Header
	extra []byte        // eager payload, or a zero-copy CTS's address and key
	req   *core.Request // an eager send: complete once staged
}

// verbsPush streams a large message through staging buffers.
type verbsPush struct {
	send *core.PendingSend
	recv uint64
	sent int
}

// verbsZC writes a large message straight into the receiver's registered buffer (RC only).
type verbsZC struct {
	id       uint32
	send     *core.PendingSend
	reg      *verbs.RegEntry
	recv     uint64
	raddr    uint64
	rkey     uint32
	posted   int
	inflight int
	final    bool // the WRITE_WITH_IMM is posted
}

type verbsAccept struct {
	p      *verbsPeer
	sendID uint64
	r      *core.RecvOp
	tag    int
	size   uint64
}

func (t *Transport) slot(buf []byte, peer int, idx uint32) []byte {
	base := (peer*verbsCredits + int(idx)) * verbsSlot
	return buf[base : base+verbsSlot]
}

func (t *Transport) Send(dst int, ctx uint64, tag int, payload []byte, req *core.Request) {
	if t.stopping.Load() {
		req.Complete(core.Status{}, t.closeErr)
		return
	}
	p := t.peers[dst]
	if err := p.failure(); err != nil {
		req.Complete(core.Status{}, err)
		return
	}
	n := uint64(len(payload))
	if n <= verbsEagerMax {
		t.enqueue(p, &verbsOut{h: wire.Header{Type: wire.Eager, Tag: int32(tag), Ctx: ctx, Length: n}, extra: payload, req: req})
		return
	}
	id, err := p.AddSend(payload, req)
	if err != nil {
		req.Complete(core.Status{}, err)
		return
	}
	t.enqueue(p, &verbsOut{h: wire.Header{Type: wire.RTS, Tag: int32(tag), Ctx: ctx, Length: n, ID: id}})
}

func (p *verbsPeer) failure() error {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return p.LinkError()
}

// enqueue queues a message for the peer and makes progress now if no one else is.
func (t *Transport) enqueue(p *verbsPeer, o *verbsOut) {
	t.qmu.Lock()
	p.outq = append(p.outq, o)
	t.qmu.Unlock()
	if t.mu.TryLock() {
		t.progressLocked()
		t.mu.Unlock()
		return
	}
	t.nudge()
}

func (t *Transport) nudge() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// progressLocked polls completions and posts what waits; it reports whether anything happened.
func (t *Transport) progressLocked() bool {
	if t.closed {
		return false
	}
	did := false
	for _, d := range t.devs {
		for {
			n, err := d.cq.Poll(t.wcs)
			if err != nil {
				t.deviceFailed(d, fmt.Errorf("polling the completion queue of %s: %w", d.dev.Name(), err))
				return true
			}
			for i := range t.wcs[:n] {
				t.complete(&t.wcs[i])
			}
			if n == 0 {
				break
			}
			did = true
		}
	}
	t.qmu.Lock()
	acc := t.accepts
	t.accepts = nil
	t.qmu.Unlock()
	for _, a := range acc {
		a.p.accept(a)
		did = true
	}
	t.qmu.Lock()
	for _, p := range t.active {
		if len(p.outq) > 0 {
			p.pend = append(p.pend, p.outq...)
			clear(p.outq)
			p.outq = p.outq[:0]
		}
	}
	t.qmu.Unlock()
	for _, p := range t.active {
		if p.flush() {
			did = true
		}
	}
	return did
}

// deviceFailed ends every link through d: the adapter or its completion queue is unusable.
func (t *Transport) deviceFailed(d *verbsDev, err error) {
	for _, p := range t.active {
		if p.d == d {
			p.linkFailed(err)
		}
	}
}

// complete handles one work completion.
func (t *Transport) complete(wc *ibv.WC) {
	kind, peer, idx := int(wc.WRID>>56), int(wc.WRID>>32&0xffffff), uint32(wc.WRID)
	if peer >= len(t.peers) || t.peers[peer] == nil {
		t.logf("gorun: rank %d: RDMA completion for unknown work request %#x", t.rank, wc.WRID)
		return
	}
	p := t.peers[peer]
	if kind != wrRecv {
		p.sqUsed--
	}
	if wc.Status != ibv.WCSuccess {
		if p.failure() == nil && !t.stopping.Load() {
			what := map[int]string{wrRecv: "receive", wrSend: "send", wrCredit: "credit write", wrWrite: "RDMA write"}[kind]
			p.linkFailed(fmt.Errorf("RDMA %s on %s QP %d failed: %v (vendor error %#x)", what, t.typ, p.qp.Num(), wc.Status, wc.Vendor))
		}
		return
	}
	switch kind {
	case wrRecv:
		p.received(idx, wc)
	case wrSend:
		p.freeSlots = append(p.freeSlots, idx)
	case wrCredit:
		p.creditBusy = false
	case wrWrite:
		for i, z := range p.zcs {
			if z.id == idx {
				z.inflight--
				if z.final && z.inflight == 0 {
					p.zcs = append(p.zcs[:i], p.zcs[i+1:]...)
					p.d.cache.Release(z.reg)
					z.send.Req.Complete(core.Status{}, nil)
				}
				break
			}
		}
	}
}

// received handles a message in receive buffer idx.
func (p *verbsPeer) received(idx uint32, wc *ibv.WC) {
	t := p.t
	if p.failure() != nil {
		return
	}
	buf := t.slot(t.recvBuf, p.rank, idx)
	p.taken++
	if wc.Opcode == ibv.WCRecvImm {
		// The last chunk of a zero-copy message: the data is in place.
		p.seqIn++
		rid, ok := p.zcRecvs[wc.Imm]
		pr := p.Recv(rid)
		if !ok || pr == nil {
			p.protocolError(fmt.Errorf("RDMA write completion for unknown receive %d", wc.Imm))
			return
		}
		delete(p.zcRecvs, wc.Imm)
		p.d.cache.Release(p.zcRegs[rid])
		delete(p.zcRegs, rid)
		p.GotData(rid, pr, pr.Size-pr.Got)
	} else if !p.handle(buf[:wc.ByteLen]) {
		return
	}
	if err := p.qp.PostRecv(&ibv.RecvWR{WRID: wrID(wrRecv, p.rank, idx), SGE: ibv.SGE{Addr: p.d.recvMR.Addr() + uint64(p.rank*verbsCredits+int(idx))*verbsSlot, Length: verbsSlot, LKey: p.d.recvMR.LKey()}}); err != nil {
		p.linkFailed(fmt.Errorf("reposting a receive buffer: %w", err))
	}
}

// handle processes one SEND; false when it broke the link.
func (p *verbsPeer) handle(b []byte) bool {
	if len(b) < verbsHdrSize {
		p.protocolError(fmt.Errorf("%d-byte message", len(b)))
		return false
	}
	h, err := wire.Parse(b[:wire.HeaderSize], verbsEagerMax, verbsEagerMax)
	if err != nil {
		p.protocolError(err)
		return false
	}
	if seq := binary.LittleEndian.Uint32(b[wire.HeaderSize:]); seq != p.seqIn {
		// Only an unreliable connection loses messages; on RC this is corruption.
		p.linkFailed(fmt.Errorf("message %d from rank %d lost over the %s queue pair (message %d arrived next)", p.seqIn, p.rank, p.t.typ, seq))
		return false
	}
	p.seqIn++
	payload := b[verbsHdrSize:]
	eng := p.t.eng
	switch h.Type {
	case wire.Eager:
		if uint64(len(payload)) != h.Length {
			p.protocolError(fmt.Errorf("eager message of %d bytes says %d", len(payload), h.Length))
			return false
		}
		eng.ArriveCopy(p.rank, h.Ctx, int(h.Tag), payload)
	case wire.RTS:
		sendID, tag, size := h.ID, int(h.Tag), h.Length
		// A receive matched now or later (by a user goroutine) is answered by the poller.
		fetch := func(r *core.RecvOp) {
			p.t.qmu.Lock()
			p.t.accepts = append(p.t.accepts, verbsAccept{p: p, sendID: sendID, r: r, tag: tag, size: size})
			p.t.qmu.Unlock()
			p.t.nudge()
		}
		if r, _ := eng.Arrive(p.rank, h.Ctx, tag, int(size), func(m *core.InMsg) { m.Fetch = fetch }); r != nil {
			fetch(r)
		}
	case wire.CTS:
		s := p.TakeSend(h.ID)
		if s == nil {
			p.protocolError(fmt.Errorf("clear-to-send for unknown message %d", h.ID))
			return false
		}
		switch {
		case h.Flags&wire.FlagDiscard != 0:
			s.Req.Complete(core.Status{}, nil)
		case len(payload) == verbsCtsZCLen:
			p.startZC(s, h.Offset, binary.LittleEndian.Uint64(payload), binary.LittleEndian.Uint32(payload[8:]))
		default:
			p.pushes = append(p.pushes, &verbsPush{send: s, recv: h.Offset})
		}
	case wire.Data:
		pr := p.Recv(h.ID)
		if pr == nil || h.Offset != pr.Got || h.Offset+h.Length > pr.Size || uint64(len(payload)) != h.Length {
			p.protocolError(fmt.Errorf("unexpected data for receive %d at offset %d", h.ID, h.Offset))
			return false
		}
		copy(pr.Buf[h.Offset:], payload)
		p.GotData(h.ID, pr, h.Length)
	default:
		p.protocolError(fmt.Errorf("message type %d", h.Type))
		return false
	}
	return true
}

// accept answers a large message that a receive matched: register the buffer for a zero-copy
// write (RC) or ask for the data through the staging buffers.
func (p *verbsPeer) accept(a verbsAccept) {
	r := a.r
	dst, terr := r.Target(p.rank, a.tag, int(a.size))
	if terr != nil {
		p.pend = append(p.pend, &verbsOut{h: wire.Header{Type: wire.CTS, Flags: wire.FlagDiscard, ID: a.sendID}})
		r.Req.Complete(r.Status(p.rank, a.tag, int(a.size)), terr)
		return
	}
	pr := &core.PendingRecv{Op: r, Buf: dst, Size: a.size, Src: p.rank, Tag: a.tag}
	var extra []byte
	var reg *verbs.RegEntry
	if p.t.typ == ibv.RC && a.size >= verbsZCMin {
		var err error
		if reg, err = p.d.cache.Acquire(dst, ibv.AccessLocalWrite|ibv.AccessRemoteWrite); err == nil {
			extra = make([]byte, verbsCtsZCLen)
			binary.LittleEndian.PutUint64(extra, reg.AddrOf(dst))
			binary.LittleEndian.PutUint32(extra[8:], reg.RKey())
		}
		// Registration failing (limits on pinned memory) falls back to staging.
	}
	rid, err := p.AddRecv(pr)
	if err != nil {
		p.d.cache.Release(reg)
		r.Req.Complete(core.Status{}, err)
		return
	}
	if extra != nil {
		p.zcRecvs[uint32(rid)], p.zcRegs[rid] = rid, reg
	}
	p.pend = append(p.pend, &verbsOut{h: wire.Header{Type: wire.CTS, ID: a.sendID, Offset: rid}, extra: extra})
}

func (p *verbsPeer) startZC(s *core.PendingSend, recv, raddr uint64, rkey uint32) {
	reg, err := p.d.cache.Acquire(s.Payload, ibv.AccessLocalWrite)
	if err != nil {
		s.Req.Complete(core.Status{}, &core.PeerError{Rank: p.rank, Err: fmt.Errorf("registering a %d-byte send buffer: %w", len(s.Payload), err)})
		return
	}
	p.t.nextZC++
	p.zcs = append(p.zcs, &verbsZC{id: p.t.nextZC, send: s, reg: reg, recv: recv, raddr: raddr, rkey: rkey})
}

// credits is how many more messages the peer can take now.
func (p *verbsPeer) credits() int {
	return verbsCredits - int(p.sent-p.ackWord())
}

func (p *verbsPeer) ackWord() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.t.ctrlBuf[8*p.rank])))
}

// postMessage stages header and payload in a send buffer and SENDs it; false when no credit,
// staging buffer or send queue entry is free.
func (p *verbsPeer) postMessage(h *wire.Header, payload []byte) bool {
	if p.credits() <= 0 || len(p.freeSlots) == 0 || p.sqUsed >= verbsSendDepth {
		return false
	}
	t := p.t
	idx := p.freeSlots[len(p.freeSlots)-1]
	buf := t.slot(t.sendBuf, p.rank, idx)
	h.Put(buf)
	binary.LittleEndian.PutUint32(buf[wire.HeaderSize:], p.seqOut)
	binary.LittleEndian.PutUint32(buf[wire.HeaderSize+4:], 0)
	n := copy(buf[verbsHdrSize:], payload)
	wr := ibv.SendWR{WRID: wrID(wrSend, p.rank, idx), Op: ibv.OpSend, Signaled: true,
		SGE: ibv.SGE{Addr: p.d.sendMR.Addr() + uint64(p.rank*verbsStaging+int(idx))*verbsSlot, Length: uint32(verbsHdrSize + n), LKey: p.d.sendMR.LKey()}}
	if !p.post(&wr) {
		return false
	}
	p.freeSlots = p.freeSlots[:len(p.freeSlots)-1]
	p.seqOut++
	p.countSent()
	return true
}

func (p *verbsPeer) countSent() {
	if p.sent == p.ackWord() {
		p.ackAt = time.Now() // the acknowledgement clock starts with the first outstanding message
	}
	p.sent++
}

func (p *verbsPeer) post(wr *ibv.SendWR) bool {
	if err := p.qp.PostSend(wr); err != nil {
		p.linkFailed(fmt.Errorf("posting an RDMA %v: %w", wr.Op, err))
		return false
	}
	p.sqUsed++
	return true
}

// flush posts what waits for the peer as far as credits and queues allow.
func (p *verbsPeer) flush() bool {
	if err := p.failure(); err != nil {
		p.abandon(err)
		return false
	}
	did := false
	for len(p.pend) > 0 {
		o := p.pend[0]
		if !p.postMessage(&o.h, o.extra) {
			break
		}
		p.pend[0] = nil
		p.pend = p.pend[1:]
		if o.req != nil {
			o.req.Complete(core.Status{}, nil)
		}
		did = true
	}
	for len(p.pend) == 0 && len(p.pushes) > 0 {
		s := p.pushes[0]
		data := s.send.Payload
		end := min(s.sent+verbsEagerMax, len(data))
		h := wire.Header{Type: wire.Data, Length: uint64(end - s.sent), ID: s.recv, Offset: uint64(s.sent)}
		if !p.postMessage(&h, data[s.sent:end]) {
			break
		}
		did = true
		s.sent = end
		if s.sent == len(data) {
			p.pushes = p.pushes[1:]
			s.send.Req.Complete(core.Status{}, nil)
		}
	}
	for _, z := range p.zcs {
		for !z.final && z.inflight < verbsMaxWrites && p.sqUsed < verbsSendDepth {
			n := min(p.d.writeChunk, len(z.send.Payload)-z.posted)
			last := z.posted+n == len(z.send.Payload)
			wr := ibv.SendWR{WRID: wrID(wrWrite, p.rank, z.id), Op: ibv.OpWrite, Signaled: true,
				SGE:        ibv.SGE{Addr: z.reg.AddrOf(z.send.Payload) + uint64(z.posted), Length: uint32(n), LKey: z.reg.LKey()},
				RemoteAddr: z.raddr + uint64(z.posted), RKey: z.rkey}
			if last {
				if p.credits() <= 0 || len(p.pend) > 0 {
					break // the immediate takes a receive buffer, in sequence with SENDs
				}
				wr.Op, wr.Imm = ibv.OpWriteImm, uint32(z.recv)
			}
			if !p.post(&wr) {
				return did
			}
			z.posted += n
			z.inflight++
			did = true
			if last {
				z.final = true
				p.seqOut++
				p.countSent()
			}
		}
	}
	p.returnCredits()
	return did
}

// returnCredits writes how many messages this rank has taken from the peer into the peer's
// control word, one write in flight at a time; on UC it is rewritten now and then, since a
// write can be lost.
func (p *verbsPeer) returnCredits() {
	t := p.t
	if p.creditBusy || p.sqUsed >= verbsSendDepth+2 {
		return
	}
	word := t.credBuf[8*p.rank : 8*p.rank+8]
	if binary.LittleEndian.Uint64(word) == p.taken && (t.typ == ibv.RC || p.taken == 0 || time.Since(p.creditAt) < 100*time.Millisecond) {
		return
	}
	binary.LittleEndian.PutUint64(word, p.taken)
	wr := ibv.SendWR{WRID: wrID(wrCredit, p.rank, 0), Op: ibv.OpWrite, Signaled: true,
		SGE:        ibv.SGE{Addr: p.d.credMR.Addr() + uint64(8*p.rank), Length: 8, LKey: p.d.credMR.LKey()},
		RemoteAddr: p.remoteCtrl, RKey: p.remoteKey}
	if p.post(&wr) {
		p.creditBusy, p.creditAt = true, time.Now()
	}
}

// checkTimers detects a peer that stopped acknowledging (messages lost on UC, a link that went
// down, a peer whose adapter vanished): an error naming it, never a wait forever.
func (p *verbsPeer) checkTimers(now time.Time) {
	if p.failure() != nil {
		return
	}
	ack := p.ackWord()
	if ack != p.acked {
		p.acked, p.ackAt = ack, now
	}
	if p.sent <= ack || now.Sub(p.ackAt) <= p.t.timeout {
		return
	}
	// A peer that still answers on its TCP link is alive: its RDMA path is what failed. One
	// silent on both is judged as any silent peer (a starved one on this host is waited for).
	answers := p.t.live.Answers(p.rank)
	if lost, why := p.t.live.Lost(p.rank, now.Sub(p.ackAt)); answers || lost {
		p.linkFailed(fmt.Errorf("no acknowledgement over RDMA for %v with %d messages outstanding: lost on the %s queue pair, or the peer's RDMA link is down%s", p.t.timeout, p.sent-ack, p.t.typ, why))
	}
}

func (p *verbsPeer) protocolError(err error) {
	p.t.logf("gorun: rank %d: protocol error from rank %d over RDMA: %v; closing the link", p.t.rank, p.rank, err)
	p.fail(fmt.Errorf("protocol error: %w", err))
}

// linkFailed is a failure this side's verbs link found: it is logged (the peer only sees the
// TCP link close), then the link ends.
func (p *verbsPeer) linkFailed(cause error) {
	if p.failure() == nil {
		p.t.logf("gorun: rank %d: RDMA link to rank %d (%s): %v; closing the link", p.t.rank, p.rank, p.d.dev.Name(), cause)
	}
	p.fail(cause)
}

// fail ends the link once: pending operations with the peer fail, and the peer is reported
// lost to the world (core.Liveness.Lose), which closes the TCP link so the peer learns too. It
// takes no transport lock (the TCP side calls it when the peer dies); the poller then abandons
// what was queued.
func (p *verbsPeer) fail(cause error) {
	p.Mu.Lock()
	sends, recvs, first := p.MarkFailed(cause)
	p.Mu.Unlock()
	if !first {
		return
	}
	p.FailPending(cause, sends, recvs)
	p.t.live.Lose(p.rank, cause)
	p.t.nudge()
}

// abandon fails what was queued for a failed peer. The caller holds t.mu.
func (p *verbsPeer) abandon(cause error) {
	if p.abandoned {
		return
	}
	p.abandoned = true
	perr := cause
	if _, ok := cause.(*core.PeerError); !ok {
		perr = &core.PeerError{Rank: p.rank, Err: cause}
	}
	p.t.qmu.Lock()
	queued := append(p.pend, p.outq...)
	p.pend, p.outq = nil, nil
	p.t.qmu.Unlock()
	for _, o := range queued {
		if o.req != nil {
			o.req.Complete(core.Status{}, perr)
		}
	}
	for _, s := range p.pushes {
		s.send.Req.Complete(core.Status{}, perr)
	}
	for _, z := range p.zcs {
		p.d.cache.Release(z.reg)
		z.send.Req.Complete(core.Status{}, perr)
	}
	for _, reg := range p.zcRegs {
		p.d.cache.Release(reg)
	}
	p.pushes, p.zcs = nil, nil
	clear(p.zcRecvs)
	clear(p.zcRegs)
}

// PeerLost is the world reporting the peer gone (core.Liveness). What the peer sent before it
// went is taken first (it may sit in the completion queue), as the other transports do.
func (t *Transport) PeerLost(rank int, cause error) {
	p := t.peers[rank]
	if p == nil || p.failure() != nil {
		return // this side failed the link first (and closed the TCP link itself)
	}
	t.mu.Lock()
	t.progressLocked()
	t.mu.Unlock()
	p.fail(cause)
}

// Poll drives progress while the caller waits for r: polling first, then naps that grow to a
// millisecond, so a long wait costs little CPU.
func (t *Transport) Poll(r *core.Request) {
	nap := 10 * time.Microsecond
	var timer *time.Timer
	var done <-chan struct{}
	for spins := 0; !r.Finished() && !t.stopping.Load(); spins++ {
		if t.mu.TryLock() {
			did := t.progressLocked()
			t.mu.Unlock()
			if did {
				spins, nap = 0, 10*time.Microsecond
				continue
			}
		}
		if spins < 100 && !r.Patient {
			if t.oversubscribed {
				// The core may be the one a peer on this host needs.
				sched.Yield()
			} else {
				runtime.Gosched()
			}
			continue
		}
		if timer == nil {
			done = r.Done()
			timer = time.NewTimer(nap)
			defer timer.Stop()
		} else {
			timer.Reset(nap)
		}
		select {
		case <-done:
			return
		case <-timer.C:
		}
		nap = min(2*nap, time.Millisecond)
	}
}

// Kick: waiters sleep on their request's channel, which completion closes.
func (t *Transport) Kick() {}

// loop makes progress nobody waits for and runs the timers.
func (t *Transport) loop() {
	defer close(t.done)
	nap := 20 * time.Microsecond
	timer := time.NewTimer(nap)
	defer timer.Stop()
	lastCheck := time.Now()
	for {
		t.mu.Lock()
		did := t.progressLocked()
		if now := time.Now(); now.Sub(lastCheck) > 50*time.Millisecond && !t.stopping.Load() {
			lastCheck = now
			for _, p := range t.active {
				p.checkTimers(now)
			}
		}
		t.mu.Unlock()
		if did {
			nap = 20 * time.Microsecond
		} else {
			nap = min(2*nap, time.Millisecond)
		}
		timer.Reset(nap)
		select {
		case <-t.stop:
			return
		case <-t.wake:
		case <-timer.C:
		}
	}
}

// idle reports that nothing waits to be sent or acknowledged by the adapter (credit writes
// aside: a finalized peer no longer polls).
func (t *Transport) idle() bool {
	t.qmu.Lock()
	defer t.qmu.Unlock()
	for _, p := range t.active {
		if p.failure() != nil {
			continue
		}
		busy := p.sqUsed
		if p.creditBusy {
			busy--
		}
		if len(p.outq)+len(p.pend)+len(p.pushes)+len(p.zcs)+busy > 0 {
			return false
		}
	}
	return true
}

// Finalize closes the transport once what was posted completed; Abandon at once.
func (t *Transport) Finalize() error { t.shutdown(true); return nil }
func (t *Transport) Abandon(error)   { t.shutdown(false) }

// shutdown closes the transport. Graceful (Finalize): first everything posted completes (on RC
// the peer's adapter has it), within the peer timeout.
func (t *Transport) shutdown(graceful bool) {
	if t.stopping.Swap(true) {
		return
	}
	deadline := time.Now().Add(t.timeout)
	for graceful && time.Now().Before(deadline) {
		t.mu.Lock()
		t.progressLocked()
		idle := t.idle()
		t.mu.Unlock()
		if idle {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.active {
		p.abandon(t.closeErr)
	}
	t.release()
}

// release frees the verbs resources, in dependency order. The caller holds t.mu (or owns t).
func (t *Transport) release() {
	if t.closed {
		return
	}
	t.closed = true
	for _, p := range t.active {
		if p.qp != nil {
			p.qp.Close()
		}
	}
	for _, d := range t.devs {
		d.release()
	}
}

func (d *verbsDev) release() {
	if d.cache != nil {
		d.cache.Close()
	}
	for _, mr := range []ibv.MR{d.recvMR, d.sendMR, d.ctrlMR, d.credMR} {
		if mr != nil {
			mr.Close()
		}
	}
	if d.cq != nil {
		d.cq.Close()
	}
	if d.pd != nil {
		d.pd.Close()
	}
	d.dev.Close()
}
