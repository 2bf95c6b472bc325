package tcp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/sched"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// Transport is a full mesh of TCP connections, one per pair of ranks. Sends of small
// messages are written by the sending goroutine straight from the user's buffer (a vectored
// write of header and payload); everything the transport writes on its own behalf (clear-to-send
// replies, the data of large messages, heartbeats) goes through one writer goroutine per
// connection, so a reader never blocks on a write and two ranks sending large messages to each
// other cannot deadlock.
//
// Reading is driven the way MPI libraries drive it: a goroutine that waits for a request polls
// the sockets itself with non-blocking reads (progress.go), so a message that arrives while
// someone waits costs no thread wake-up, the dominant cost on VMs whose idle cores halt.
// The sockets are taken out of Go's netpoller for that: a registered socket wakes a thread
// sleeping in epoll on every packet even when nobody waits for it. One background goroutine
// per transport (pollLoop) reads whatever arrives while nobody waits, with poll(2), and keeps
// the peers' liveness deadlines.
type Transport struct {
	eng     *core.Engine // where arrivals go
	peers   []*tcpPeer
	meshMu  sync.Mutex // guards peers while the mesh is built
	timeout time.Duration
	live    core.Liveness // the world's: reports lost peers, decides when a silent peer is lost

	// oversubscribed: this host runs more ranks than it has cores, so a waiter yields the core
	// between polls and gives up polling sooner (the core may be the one its peer needs).
	oversubscribed bool
	// dataPeers: the links that carry data, by comm's route table (CarryData): what waiters poll.
	// The others carry only heartbeats, their peers' data going through another transport.
	dataPeers []*tcpPeer
	waiters   atomic.Int32  // goroutines polling in Wait now
	waits     atomic.Uint32 // polling waits begun, ever: the background goroutine's sign of activity
	stop      chan struct{} // closed by finalize: the background goroutine ends
	pollDone  chan struct{}
	idle      LinkWaiter // how the background goroutine sleeps on the links

	rank      int                              // this rank's world rank
	finalized error                            // the cause of a link whose peer finalized (comm.ErrFinalized)
	logf      func(format string, args ...any) // what the rank logs (a protocol error)
}

type tcpPeer struct {
	t    *Transport
	rank int
	addr string

	// The socket, non-blocking and outside Go's netpoller. fdMu is held (read) around every
	// system call on it and (write) to close it, so that a number the kernel may reuse after
	// close is never read or written; fail shuts the socket down first, which wakes any call
	// blocked on it.
	fdMu     sync.RWMutex
	fd       int
	fdClosed bool

	// rmu: one reader of the socket at a time (a waiter or the background goroutine), which
	// owns the read buffer rbuf[rlo:rhi] and handles whole frames.
	rmu      sync.Mutex
	rbuf     []byte
	rlo, rhi int
	heard    atomic.Int64 // p.t.clock() when bytes last came from the peer: its liveness
	// polls counts waiters' polls of the link; seenPolls (the background goroutine's own) is
	// its value when that goroutine last looked, so that it leaves a link being polled alone.
	polls     atomic.Uint32
	seenPolls uint32

	wmu       sync.Mutex // one writer at a time on the connection
	wbuf      [wire.HeaderSize + tcpSmallWrite]byte
	lastWrite atomic.Int64 // p.t.clock() at the last write, for heartbeats

	// out: frames the transport writes on its own behalf (clear-to-send replies, the data of
	// large messages), in order, under wmu; the first may be written in part (outOff bytes).
	// Whoever polls the link pushes them with non-blocking writes, as it reads. New frames
	// wait in queued (under qmu) so that a reader never waits for wmu: a writer holding it
	// may be waiting for the peer to read, and the peer's writer for us.
	out     []outFrame
	outOff  int
	qmu     sync.Mutex
	queued  []outFrame
	pending atomic.Bool // out or queued is not empty: the pollers' cue

	core.Rendezvous // large messages in flight; its Mu also guards bye
	bye             bool
	done            chan struct{} // closed when the link is gone
}

// outFrame is a queued frame: a CTS, or one chunk of a large message's data (send is set on
// its last chunk, and completed once that is written).
type outFrame struct {
	hdr  [wire.HeaderSize]byte
	data []byte
	send *core.PendingSend
}

const (
	// tcpSmallWrite: payloads up to this size are copied behind the header and written in one go.
	tcpSmallWrite = 4 << 10
	// tcpReadBuf: the read buffer; reads of a payload at least half its size go straight into
	// the receive buffer.
	tcpReadBuf = 256 << 10
)

// clock is the time since the process started: one monotonic clock read, cheaper than
// time.Now.
func (t *Transport) clock() time.Duration { return time.Since(clockStart) }

var clockStart = time.Now()

// newTCPPeer takes over conn's socket: it keeps a duplicate of the descriptor and closes conn,
// which takes the socket out of Go's netpoller.
func newTCPPeer(t *Transport, rank int, addr string, conn *net.TCPConn) (*tcpPeer, error) {
	fd, err := Detach(conn)
	if err != nil {
		return nil, fmt.Errorf("comm: link to rank %d at %s: %w", rank, addr, err)
	}
	p := &tcpPeer{
		t: t, rank: rank, addr: addr, fd: fd,
		rbuf:       make([]byte, tcpReadBuf),
		Rendezvous: core.NewRendezvous(rank),
		done:       make(chan struct{}),
	}
	now := int64(t.clock())
	p.lastWrite.Store(now)
	p.heard.Store(now)
	return p, nil
}

func (p *tcpPeer) start() {
	go p.heartbeatLoop()
}

func (t *Transport) Send(dst int, ctx uint64, tag int, payload []byte, req *core.Request) {
	p := t.peers[dst]
	n := uint64(len(payload))
	if n <= eagerLimit {
		err := p.write(&wire.Header{Type: wire.Eager, Tag: int32(tag), Ctx: ctx, Length: n}, payload)
		req.Complete(core.Status{}, err)
		return
	}
	id, err := p.AddSend(payload, req)
	if err != nil {
		req.Complete(core.Status{}, err)
		return
	}
	// A failed write fails the link, and with it every pending send, this one included.
	_ = p.write(&wire.Header{Type: wire.RTS, Tag: int32(tag), Ctx: ctx, Length: n, ID: id}, nil)
}

// write sends one frame; a write error breaks the link.
func (p *tcpPeer) write(h *wire.Header, payload []byte) error {
	p.wmu.Lock()
	select {
	case <-p.done:
		p.wmu.Unlock()
		return p.linkError()
	default:
	}
	h.Put(p.wbuf[:wire.HeaderSize])
	// A queued frame written in part must be finished first.
	done, _, err := p.pushOut(true, true)
	if err == nil && len(payload) <= tcpSmallWrite {
		// One copy is cheaper than a vectored write for a small payload.
		n := copy(p.wbuf[wire.HeaderSize:], payload)
		err = p.writeAll(p.wbuf[:wire.HeaderSize+n], nil)
	} else if err == nil {
		err = p.writeAll(p.wbuf[:wire.HeaderSize], payload)
	}
	if err == nil && p.pending.Load() {
		// Frames queued while we wrote: push what the socket takes.
		var more []*core.PendingSend
		more, _, err = p.pushOut(false, false)
		done = append(done, more...)
	}
	p.lastWrite.Store(int64(p.t.clock()))
	p.wmu.Unlock()
	completeSends(done)
	if err != nil {
		p.fail(fmt.Errorf("write to %s: %w", p.addr, err))
		return p.linkError()
	}
	return nil
}

// writeAll writes a and then b, waiting for room in the socket while it is full (a peer that
// takes nothing for the peer timeout is presumed dead). The caller holds wmu.
func (p *tcpPeer) writeAll(a, b []byte) error {
	stalled := p.t.clock()
	for len(a)+len(b) > 0 {
		p.fdMu.RLock()
		if p.fdClosed {
			p.fdMu.RUnlock()
			return net.ErrClosed
		}
		n, err := Writev(p.fd, a, b)
		p.fdMu.RUnlock()
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if lost, why := p.t.live.Lost(p.rank, p.t.clock()-stalled); lost {
				return fmt.Errorf("peer took nothing for %v (peer timeout)%s", p.t.timeout, why)
			}
			if err := p.waitFD(unix.POLLOUT, 100*time.Millisecond); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		stalled = p.t.clock()
		k := min(n, len(a))
		a, b = a[k:], b[n-k:]
	}
	return nil
}

// waitFD blocks in poll(2) until the socket is ready for events (or shut down, or the wait
// passes).
func (p *tcpPeer) waitFD(events int16, wait time.Duration) error {
	p.fdMu.RLock()
	defer p.fdMu.RUnlock()
	if p.fdClosed {
		return net.ErrClosed
	}
	fds := [1]unix.PollFd{{Fd: int32(p.fd), Events: events}}
	_, err := unix.Poll(fds[:], max(int(wait/time.Millisecond), 1))
	if err != nil && err != unix.EINTR {
		return err
	}
	return nil
}

func (p *tcpPeer) linkError() error {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if err := p.Rendezvous.LinkError(); err != nil {
		return err
	}
	return &core.PeerError{Rank: p.rank, Err: errors.New("link closed")}
}

// queue appends frames to the link's output and writes what the socket takes now, unless
// another goroutine is writing (then it, or the next poll, pushes them on).
func (p *tcpPeer) queue(frames ...outFrame) {
	p.qmu.Lock()
	if p.broken() {
		// fail has emptied the queues already (it marks the link broken first).
		p.qmu.Unlock()
		err := p.linkError()
		for _, f := range frames {
			if f.send != nil {
				f.send.Req.Complete(core.Status{}, err)
			}
		}
		return
	}
	p.queued = append(p.queued, frames...)
	p.pending.Store(true)
	p.qmu.Unlock()
	p.flush()
}

// flush writes what it can of the queued output without waiting, unless another goroutine is
// writing to the link; it reports whether it wrote anything.
func (p *tcpPeer) flush() bool {
	if !p.pending.Load() || !p.wmu.TryLock() {
		return false
	}
	done, wrote, err := p.pushOut(false, false)
	p.wmu.Unlock()
	completeSends(done)
	if err != nil {
		p.fail(fmt.Errorf("write to %s: %w", p.addr, err))
	}
	return wrote > 0 || err != nil
}

func completeSends(done []*core.PendingSend) {
	for _, s := range done {
		s.Req.Complete(core.Status{}, nil)
	}
}

// pushOut writes queued frames: with block it waits for room in the socket; with one it stops
// at the end of the frame in progress. It returns the sends whose last byte went out (the
// caller completes them after releasing wmu) and how many bytes it wrote. The caller holds wmu.
func (p *tcpPeer) pushOut(block, one bool) (done []*core.PendingSend, wrote int, err error) {
	if !one {
		p.qmu.Lock()
		p.out = append(p.out, p.queued...)
		clear(p.queued)
		p.queued = p.queued[:0]
		p.qmu.Unlock()
	}
	for len(p.out) > 0 {
		if one && p.outOff == 0 {
			break
		}
		f := &p.out[0]
		var hdr, data []byte
		if p.outOff < wire.HeaderSize {
			hdr, data = f.hdr[p.outOff:], f.data
		} else {
			data = f.data[p.outOff-wire.HeaderSize:]
		}
		p.fdMu.RLock()
		if p.fdClosed {
			p.fdMu.RUnlock()
			return done, wrote, net.ErrClosed
		}
		var n int
		if len(hdr) > 0 {
			n, err = Writev(p.fd, hdr, data)
		} else {
			n, err = Writev(p.fd, data, nil)
		}
		p.fdMu.RUnlock()
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			err = nil
			if !block {
				return done, wrote, nil
			}
			if err = p.waitFD(unix.POLLOUT, 100*time.Millisecond); err != nil {
				return done, wrote, err
			}
			if lost, why := p.t.live.Lost(p.rank, p.t.clock()-time.Duration(p.lastWrite.Load())); lost {
				return done, wrote, fmt.Errorf("peer took nothing for %v (peer timeout)%s", p.t.timeout, why)
			}
			continue
		case err != nil:
			return done, wrote, err
		}
		p.lastWrite.Store(int64(p.t.clock()))
		wrote += n
		p.outOff += n
		if p.outOff < wire.HeaderSize+len(f.data) {
			continue
		}
		if f.send != nil {
			done = append(done, f.send)
		}
		*f = outFrame{}
		p.out = p.out[1:]
		p.outOff = 0
	}
	if len(p.out) == 0 {
		p.out = nil
		p.qmu.Lock()
		p.pending.Store(len(p.queued) > 0)
		p.qmu.Unlock()
	}
	return done, wrote, nil
}

// dataFrames splits a large message's payload into the frames that carry it into the
// receiver's buffer id.
func dataFrames(s *core.PendingSend, id uint64) []outFrame {
	data := s.Payload
	frames := make([]outFrame, 0, (len(data)+dataChunk-1)/dataChunk)
	for off := 0; off < len(data); off += dataChunk {
		end := min(off+dataChunk, len(data))
		var f outFrame
		(&wire.Header{Type: wire.Data, Length: uint64(end - off), ID: id, Offset: uint64(off)}).Put(f.hdr[:])
		f.data = data[off:end]
		frames = append(frames, f)
	}
	frames[len(frames)-1].send = s
	return frames
}

func ctsFrame(h wire.Header) outFrame {
	var f outFrame
	h.Put(f.hdr[:])
	return f
}

// heartbeatLoop writes a ping whenever the link has been quiet for a quarter of the peer
// timeout, so that the peer knows this rank lives.
func (p *tcpPeer) heartbeatLoop() {
	interval := p.t.timeout / 4
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			if p.t.clock()-time.Duration(p.lastWrite.Load()) >= interval {
				if p.write(&wire.Header{Type: wire.Ping}, nil) != nil {
					return
				}
			}
		}
	}
}

// handleFrame reads one frame from the peer and acts on it; false when the link broke. The
// caller holds rmu and knows that bytes of the frame have arrived (the rest it waits for).
func (p *tcpPeer) handleFrame() bool {
	var hb [wire.HeaderSize]byte
	eng := p.t.eng
	if err := p.readFull(hb[:]); err != nil {
		p.readFailed(err)
		return false
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		p.protocolError(err)
		return false
	}
	switch h.Type {
	case wire.Eager:
		tag, size := int(h.Tag), int(h.Length)
		r, m := eng.Arrive(p.rank, h.Ctx, tag, size, func(m *core.InMsg) { m.Data = make([]byte, m.Size) })
		if r == nil {
			if err := p.readFull(m.Data); err != nil {
				p.readFailed(err)
				return false
			}
			eng.Ready(m)
			return true
		}
		dst, terr := r.Target(p.rank, tag, size)
		if err := p.readFull(dst); err != nil {
			r.Req.Complete(core.Status{}, &core.PeerError{Rank: p.rank, Err: err})
			p.readFailed(err)
			return false
		}
		if terr != nil {
			if err := p.discard(size - len(dst)); err != nil {
				p.readFailed(err)
				return false
			}
		}
		r.Req.Complete(r.Status(p.rank, tag, size), terr)
	case wire.RTS:
		sendID, tag, size := h.ID, int(h.Tag), h.Length
		r, _ := eng.Arrive(p.rank, h.Ctx, tag, int(size), func(m *core.InMsg) {
			m.Fetch = func(r *core.RecvOp) { p.acceptRTS(sendID, r, tag, size) }
		})
		if r != nil {
			p.acceptRTS(sendID, r, tag, size)
		}
	case wire.CTS:
		s := p.TakeSend(h.ID)
		if s == nil {
			p.protocolError(fmt.Errorf("clear-to-send for unknown message %d", h.ID))
			return false
		}
		if h.Flags&wire.FlagDiscard != 0 {
			s.Req.Complete(core.Status{}, nil)
			return true
		}
		if len(s.Payload) == 0 {
			s.Req.Complete(core.Status{}, nil)
			return true
		}
		p.queue(dataFrames(s, h.Offset)...)
	case wire.Data:
		pr := p.Recv(h.ID)
		if pr == nil || h.Offset != pr.Got || h.Offset+h.Length > pr.Size {
			p.protocolError(fmt.Errorf("unexpected data for receive %d at offset %d", h.ID, h.Offset))
			return false
		}
		if err := p.readFull(pr.Buf[h.Offset : h.Offset+h.Length]); err != nil {
			p.readFailed(err)
			return false
		}
		p.GotData(h.ID, pr, h.Length)
	case wire.Ping:
	case wire.Bye:
		p.Mu.Lock()
		p.bye = true
		p.Mu.Unlock()
	}
	return true
}

// acceptRTS runs when a receive matches a large message: it registers where the data goes and
// asks the sender for it. A receive too small for the message takes none of it.
func (p *tcpPeer) acceptRTS(sendID uint64, r *core.RecvOp, tag int, size uint64) {
	dst, terr := r.Target(p.rank, tag, int(size))
	if terr != nil {
		p.queue(ctsFrame(wire.Header{Type: wire.CTS, Flags: wire.FlagDiscard, ID: sendID}))
		r.Req.Complete(r.Status(p.rank, tag, int(size)), terr)
		return
	}
	rid, err := p.AddRecv(&core.PendingRecv{Op: r, Buf: dst, Size: size, Src: p.rank, Tag: tag})
	if err != nil {
		r.Req.Complete(core.Status{}, err)
		return
	}
	p.queue(ctsFrame(wire.Header{Type: wire.CTS, ID: sendID, Offset: rid}))
}

// peerTimeoutError: nothing came from the peer for the peer timeout; why adds what was found
// of its process.
type peerTimeoutError struct{ why string }

func (e peerTimeoutError) Error() string { return "peer timeout" + e.why }

// readFull fills b from the read buffer and the socket, waiting for the bytes still in flight.
// The caller holds rmu.
func (p *tcpPeer) readFull(b []byte) error {
	for len(b) > 0 {
		if p.rlo < p.rhi {
			n := copy(b, p.rbuf[p.rlo:p.rhi])
			p.rlo += n
			b = b[n:]
			continue
		}
		if len(b) >= len(p.rbuf)/2 {
			n, err := p.readSome(b, true)
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		if _, err := p.fill(true); err != nil {
			return err
		}
	}
	return nil
}

// discard skips n bytes of the stream. The caller holds rmu.
func (p *tcpPeer) discard(n int) error {
	for n > 0 {
		if p.rlo == p.rhi {
			if _, err := p.fill(true); err != nil {
				return err
			}
		}
		k := min(n, p.rhi-p.rlo)
		p.rlo += k
		n -= k
	}
	return nil
}

// fill reads what the socket has into the (empty) read buffer; with block it waits for at
// least one byte, else it reports whether any came. The caller holds rmu.
func (p *tcpPeer) fill(block bool) (bool, error) {
	p.rlo, p.rhi = 0, 0
	n, err := p.readSome(p.rbuf, block)
	p.rhi = n
	return n > 0, err
}

// readSome is one read of the socket into b. Without block, no data is (0, nil); with block it
// spins briefly and then sleeps in poll(2) until bytes come, the link ends, or the peer has
// been silent for the peer timeout. The caller holds rmu.
func (p *tcpPeer) readSome(b []byte, block bool) (int, error) {
	spins := 0
	var spinStart time.Time
	for {
		p.fdMu.RLock()
		if p.fdClosed {
			p.fdMu.RUnlock()
			return 0, net.ErrClosed
		}
		n, err := Read(p.fd, b)
		p.fdMu.RUnlock()
		switch {
		case n > 0:
			p.heard.Store(int64(p.t.clock()))
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return 0, err
		case !block:
			return 0, nil
		}
		// The peer may be waiting, to send the rest, for what we have queued for it (or for a
		// third rank, waiting in turn for us): push every link's output while we wait.
		if p.t.flushAll() {
			spins = 0
			continue
		}
		// The rest of a frame whose start has come is normally microseconds behind: spin for
		// it (a sleep in poll would cost a wake-up per socket-buffer's worth of a large message).
		if spins++; spins == 1 {
			spinStart = time.Now()
		}
		if p.t.oversubscribed {
			sched.Yield()
		}
		if time.Since(spinStart) < tcpSpinTime {
			continue
		}
		if lost, why := p.t.live.Lost(p.rank, p.t.clock()-time.Duration(p.heard.Load())); lost {
			return 0, peerTimeoutError{why}
		}
		wait := 100 * time.Millisecond
		if p.t.anyPending() {
			wait = time.Millisecond // and then push again
		}
		if err := p.waitFD(unix.POLLIN, wait); err != nil {
			return 0, err
		}
	}
}

// flushAll pushes every link's queued output that its socket takes now; it reports whether
// any bytes went.
func (t *Transport) flushAll() bool {
	did := false
	for _, q := range t.peers {
		if q != nil && q.flush() {
			did = true
		}
	}
	return did
}

func (t *Transport) anyPending() bool {
	for _, q := range t.peers {
		if q != nil && q.pending.Load() {
			return true
		}
	}
	return false
}

func (p *tcpPeer) readFailed(err error) {
	p.Mu.Lock()
	bye := p.bye
	p.Mu.Unlock()
	switch {
	case bye && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		p.fail(p.t.finalized)
	case errors.As(err, new(peerTimeoutError)):
		p.fail(fmt.Errorf("no word from %s for %v (peer timeout)%s: presumed dead", p.addr, p.t.timeout, err.(peerTimeoutError).why))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, unix.ECONNRESET):
		p.fail(fmt.Errorf("connection to %s closed by the peer (process exited or crashed)", p.addr))
	default:
		p.fail(fmt.Errorf("connection to %s: %w", p.addr, err))
	}
}

func (p *tcpPeer) protocolError(err error) {
	p.t.logf("gorun: rank %d: protocol error from rank %d (%s): %v; closing the link", p.t.rank, p.rank, p.addr, err)
	p.fail(fmt.Errorf("protocol error: %w", err))
}

// fail breaks the link once: every pending operation with this peer ends with the cause, and
// the peer is reported lost to the world (Config.Live), which tells the other transports.
func (p *tcpPeer) fail(cause error) {
	p.Mu.Lock()
	sends, recvs, first := p.MarkFailed(cause)
	if !first {
		p.Mu.Unlock()
		return
	}
	close(p.done)
	p.Mu.Unlock()
	p.shutdownFD()
	p.FailPending(cause, sends, recvs)
	// Sends whose data was queued fail too. (No caller of fail holds wmu; a writer holding it
	// returns at once now that the socket is shut down.)
	p.wmu.Lock()
	p.qmu.Lock()
	out := append(p.out, p.queued...)
	p.out, p.outOff, p.queued = nil, 0, nil
	p.pending.Store(false)
	p.qmu.Unlock()
	p.wmu.Unlock()
	for _, f := range out {
		if f.send != nil {
			f.send.Req.Complete(core.Status{}, &core.PeerError{Rank: p.rank, Err: cause})
		}
	}
	p.t.live.Lose(p.rank, cause)
}

// PeerLost ends the link to a peer the world found lost (Config.Live); the link that found the
// loss itself has failed already.
func (t *Transport) PeerLost(rank int, cause error) {
	if p := t.peers[rank]; p != nil {
		p.fail(cause)
	}
}

// Abandon breaks every link, as the process's exit would.
func (t *Transport) Abandon(cause error) {
	for _, p := range t.peers {
		if p != nil {
			p.fail(cause)
		}
	}
}

// closeAll fails every link with cause, stops the background goroutine and closes the sockets:
// the end of a mesh whose set-up failed.
func (t *Transport) closeAll(cause error) {
	t.Abandon(cause)
	t.stopPolling()
	for _, p := range t.peers {
		if p != nil {
			p.closeFD()
		}
	}
}

// shutdownFD ends both directions of the socket: blocked polls return, later reads see the
// end. The descriptor itself is closed by closeFD once nothing can be using it.
func (p *tcpPeer) shutdownFD() {
	p.fdMu.RLock()
	if !p.fdClosed {
		unix.Shutdown(p.fd, unix.SHUT_RDWR)
	}
	p.fdMu.RUnlock()
}

func (p *tcpPeer) closeFD() {
	p.fdMu.Lock()
	if !p.fdClosed {
		p.fdClosed = true
		unix.Close(p.fd)
	}
	p.fdMu.Unlock()
}

// Finalize tells every peer nothing more will come, then waits (bounded) for each peer to say
// the same, so that no message still in flight is cut off by a reset. The data transports
// finalized first (comm's route.go): their peers' links end here.
func (t *Transport) Finalize() error {
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		if p.write(&wire.Header{Type: wire.Bye}, nil) == nil {
			p.fdMu.RLock()
			if !p.fdClosed {
				unix.Shutdown(p.fd, unix.SHUT_WR)
			}
			p.fdMu.RUnlock()
		}
	}
	// The background goroutine reads each peer's bye and end of stream, which ends its link.
	deadline := time.After(max(t.timeout, 5*time.Second))
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-deadline:
		}
		p.fail(t.finalized)
	}
	t.stopPolling()
	for _, p := range t.peers {
		if p != nil {
			p.closeFD()
		}
	}
	return nil
}
