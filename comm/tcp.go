package comm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tcpTransport is a full mesh of TCP connections, one per pair of ranks. Sends of small
// messages are written by the sending goroutine straight from the user's buffer (a vectored
// write of header and payload); everything the transport writes on its own behalf (clear-to-send
// replies, the data of large messages, heartbeats) goes through one writer goroutine per
// connection, so the reader goroutine never blocks on a write and two ranks sending large
// messages to each other cannot deadlock.
type tcpTransport struct {
	w       *world
	peers   []*tcpPeer
	timeout time.Duration
	// Peers on this host exchange data through shared memory; their TCP link stays as the
	// liveness channel.
	// Set once, after the shared-memory setup, while the links' readers already run.
	shm atomic.Pointer[shmTransport]
	// With GORUN_TRANSPORT=verbs every peer's data goes over RDMA (verbs.go); TCP stays the
	// liveness channel.
	verbs atomic.Pointer[verbsTransport]
}

type tcpPeer struct {
	t    *tcpTransport
	rank int
	addr string
	conn *net.TCPConn
	br   *bufio.Reader

	wmu       sync.Mutex // one writer at a time on the connection
	wbuf      [headerSize + tcpSmallWrite]byte
	lastWrite atomic.Int64 // p.t.clock() at the last write, for heartbeats

	// The read deadline is pushed forward only when a quarter of the timeout has passed since
	// it was last set (setting it costs a timer update): every read still has at least three
	// quarters of the timeout, and a live peer writes at least every half (heartbeats).
	deadlineSet time.Duration // p.t.clock() when the deadline was last set

	qmu   sync.Mutex
	queue []writeJob
	kick  chan struct{}

	rendezvous // large messages in flight; its mu also guards bye
	bye        bool
	done       chan struct{} // closed when the link is gone
	readerDone chan struct{}
}

// writeJob is a write the peer's writer goroutine performs: a CTS (send == nil) or the data of a
// large message (send != nil) into the receiver's buffer id.
type writeJob struct {
	hdr  header
	send *pendingSend
}

// tcpSmallWrite: payloads up to this size are copied behind the header and written in one go.
const tcpSmallWrite = 4 << 10

// clock is the time since the process started: one monotonic clock read, cheaper than
// time.Now.
func (t *tcpTransport) clock() time.Duration { return time.Since(clockStart) }

var clockStart = time.Now()

func newTCPPeer(t *tcpTransport, rank int, addr string, conn *net.TCPConn) *tcpPeer {
	p := &tcpPeer{
		t: t, rank: rank, addr: addr, conn: conn,
		br:         bufio.NewReaderSize(conn, 256<<10),
		kick:       make(chan struct{}, 1),
		rendezvous: newRendezvous(rank),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	p.lastWrite.Store(int64(t.clock()))
	return p
}

func (p *tcpPeer) start() {
	go p.readLoop()
	go p.writeLoop()
}

func (t *tcpTransport) send(dst int, ctx uint64, tag int, payload []byte, req *Request) {
	if vb := t.verbs.Load(); vb != nil {
		vb.send(dst, ctx, tag, payload, req)
		return
	}
	if sh := t.shm.Load(); sh != nil && sh.peers[dst] != nil {
		sh.send(dst, ctx, tag, payload, req)
		return
	}
	p := t.peers[dst]
	n := uint64(len(payload))
	if n <= eagerLimit {
		err := p.write(&header{typ: frameEager, tag: int32(tag), ctx: ctx, length: n}, payload)
		req.complete(Status{}, err)
		return
	}
	id, err := p.addSend(payload, req)
	if err != nil {
		req.complete(Status{}, err)
		return
	}
	// A failed write fails the link, and with it every pending send, this one included.
	_ = p.write(&header{typ: frameRTS, tag: int32(tag), ctx: ctx, length: n, id: id}, nil)
}

// write sends one frame; a write error breaks the link.
func (p *tcpPeer) write(h *header, payload []byte) error {
	p.wmu.Lock()
	select {
	case <-p.done:
		p.wmu.Unlock()
		return p.linkError()
	default:
	}
	h.put(p.wbuf[:headerSize])
	var err error
	if len(payload) <= tcpSmallWrite {
		// One copy is cheaper than a vectored write for a small payload.
		n := copy(p.wbuf[headerSize:], payload)
		_, err = p.conn.Write(p.wbuf[:headerSize+n])
	} else {
		bufs := net.Buffers{p.wbuf[:headerSize], payload}
		_, err = bufs.WriteTo(p.conn)
	}
	p.lastWrite.Store(int64(p.t.clock()))
	p.wmu.Unlock()
	if err != nil {
		p.fail(fmt.Errorf("write to %s: %w", p.addr, err))
		return p.linkError()
	}
	return nil
}

func (p *tcpPeer) linkError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.rendezvous.linkError(); err != nil {
		return err
	}
	return &PeerError{Rank: p.rank, Err: errors.New("link closed")}
}

func (p *tcpPeer) enqueue(j writeJob) {
	p.qmu.Lock()
	p.queue = append(p.queue, j)
	p.qmu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *tcpPeer) writeLoop() {
	interval := p.t.timeout / 4
	if interval <= 0 {
		interval = time.Hour
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			if p.t.clock()-time.Duration(p.lastWrite.Load()) >= interval {
				if p.write(&header{typ: framePing}, nil) != nil {
					return
				}
			}
			continue
		case <-p.kick:
		}
		for {
			p.qmu.Lock()
			jobs := p.queue
			p.queue = nil
			p.qmu.Unlock()
			if len(jobs) == 0 {
				break
			}
			for _, j := range jobs {
				if j.send == nil {
					if p.write(&j.hdr, nil) != nil {
						return
					}
					continue
				}
				data := j.send.payload
				for off := 0; off < len(data); off += dataChunk {
					end := min(off+dataChunk, len(data))
					h := header{typ: frameData, length: uint64(end - off), id: j.hdr.id, offset: uint64(off)}
					if p.write(&h, data[off:end]) != nil {
						return
					}
				}
				j.send.req.complete(Status{}, nil)
			}
		}
	}
}

func (p *tcpPeer) readLoop() {
	defer close(p.readerDone)
	var hb [headerSize]byte
	eng := p.t.w.eng
	for {
		if err := p.readFull(hb[:]); err != nil {
			p.readFailed(err)
			return
		}
		h, err := parseHeader(hb[:])
		if err != nil {
			p.protocolError(err)
			return
		}
		switch h.typ {
		case frameEager:
			tag, size := int(h.tag), int(h.length)
			r, m := eng.arrive(p.rank, h.ctx, tag, size, func(m *inMsg) { m.data = make([]byte, m.size) })
			if r == nil {
				if err := p.readFull(m.data); err != nil {
					p.readFailed(err)
					return
				}
				eng.ready(m)
				continue
			}
			dst, terr := r.target(p.rank, tag, size)
			if err := p.readFull(dst); err != nil {
				r.req.complete(Status{}, &PeerError{Rank: p.rank, Err: err})
				p.readFailed(err)
				return
			}
			if terr != nil {
				if _, err := p.br.Discard(size - len(dst)); err != nil {
					p.readFailed(err)
					return
				}
			}
			r.req.complete(r.status(p.rank, tag, size), terr)
		case frameRTS:
			sendID, tag, size := h.id, int(h.tag), h.length
			r, _ := eng.arrive(p.rank, h.ctx, tag, int(size), func(m *inMsg) {
				m.fetch = func(r *recvOp) { p.acceptRTS(sendID, r, tag, size) }
			})
			if r != nil {
				p.acceptRTS(sendID, r, tag, size)
			}
		case frameCTS:
			s := p.takeSend(h.id)
			if s == nil {
				p.protocolError(fmt.Errorf("clear-to-send for unknown message %d", h.id))
				return
			}
			if h.flags&flagDiscard != 0 {
				s.req.complete(Status{}, nil)
				continue
			}
			p.enqueue(writeJob{hdr: header{id: h.offset}, send: s})
		case frameData:
			pr := p.recv(h.id)
			if pr == nil || h.offset != pr.got || h.offset+h.length > pr.size {
				p.protocolError(fmt.Errorf("unexpected data for receive %d at offset %d", h.id, h.offset))
				return
			}
			if err := p.readFull(pr.buf[h.offset : h.offset+h.length]); err != nil {
				p.readFailed(err)
				return
			}
			p.gotData(h.id, pr, h.length)
		case framePing:
		case frameBye:
			p.mu.Lock()
			p.bye = true
			p.mu.Unlock()
		}
	}
}

// acceptRTS runs when a receive matches a large message: it registers where the data goes and
// asks the sender for it. A receive too small for the message takes none of it.
func (p *tcpPeer) acceptRTS(sendID uint64, r *recvOp, tag int, size uint64) {
	dst, terr := r.target(p.rank, tag, int(size))
	if terr != nil {
		p.enqueue(writeJob{hdr: header{typ: frameCTS, flags: flagDiscard, id: sendID}})
		r.req.complete(r.status(p.rank, tag, int(size)), terr)
		return
	}
	rid, err := p.addRecv(&pendingRecv{op: r, buf: dst, size: size, src: p.rank, tag: tag})
	if err != nil {
		r.req.complete(Status{}, err)
		return
	}
	p.enqueue(writeJob{hdr: header{typ: frameCTS, id: sendID, offset: rid}})
}

func (p *tcpPeer) readFull(b []byte) error {
	if p.t.timeout > 0 {
		if now := p.t.clock(); now-p.deadlineSet >= p.t.timeout/4 || p.deadlineSet == 0 {
			p.conn.SetReadDeadline(time.Now().Add(p.t.timeout))
			p.deadlineSet = now
		}
	}
	_, err := io.ReadFull(p.br, b)
	return err
}

func (p *tcpPeer) readFailed(err error) {
	p.mu.Lock()
	bye := p.bye
	p.mu.Unlock()
	var ne net.Error
	switch {
	case bye && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		p.fail(ErrFinalized)
	case errors.As(err, &ne) && ne.Timeout():
		p.fail(fmt.Errorf("no word from %s for %v (peer timeout): presumed dead", p.addr, p.t.timeout))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		p.fail(fmt.Errorf("connection to %s closed by the peer (process exited or crashed)", p.addr))
	default:
		p.fail(fmt.Errorf("connection to %s: %w", p.addr, err))
	}
}

func (p *tcpPeer) protocolError(err error) {
	logf("gorun: rank %d: protocol error from rank %d (%s): %v; closing the link", p.t.w.rank, p.rank, p.addr, err)
	p.fail(fmt.Errorf("protocol error: %w", err))
}

// fail breaks the link once: every pending operation with this peer ends with the cause.
func (p *tcpPeer) fail(cause error) {
	p.mu.Lock()
	sends, recvs, first := p.markFailed(cause)
	if !first {
		p.mu.Unlock()
		return
	}
	close(p.done)
	p.mu.Unlock()
	p.conn.Close()
	p.failPending(cause, sends, recvs)
	if sh := p.t.shm.Load(); sh != nil && sh.peers[p.rank] != nil {
		sh.peers[p.rank].fail(cause)
	}
	if vb := p.t.verbs.Load(); vb != nil {
		vb.peerFailed(p.rank, cause)
	}
	p.t.w.eng.peerFailed(p.rank, cause)
}

// finalize tells every peer nothing more will come, then waits (bounded) for each peer to say
// the same, so that no message still in flight is cut off by a reset.
func (t *tcpTransport) finalize() error {
	if sh := t.shm.Load(); sh != nil {
		sh.shutdown()
	}
	if vb := t.verbs.Load(); vb != nil {
		vb.shutdown(true)
	}
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		if p.write(&header{typ: frameBye}, nil) == nil {
			p.conn.CloseWrite()
		}
	}
	deadline := time.After(max(t.timeout, 5*time.Second))
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		select {
		case <-p.readerDone:
		case <-deadline:
		}
		p.fail(ErrFinalized)
	}
	return nil
}
