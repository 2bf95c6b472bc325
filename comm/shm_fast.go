//go:build linux || darwin

package comm

// Blocking Send and Recv of small messages to and from a shared-memory peer allocate nothing:
// the send writes its record at once (it never needed a Request), and the receive reuses one
// recvOp per world. A ping-pong allocated two objects per round trip before; on a run of a
// few milliseconds the heap then grows into fresh pages, each one a page fault (5-20 us on
// these VMs) every 16 round trips or so, and a longer run spends the same in GC cycles,
// whose workers take a core from a spinning rank.

// shmPeerOf returns the shared-memory link to world rank w, or nil when messages to w take
// another way (TCP, verbs, the rank itself, or shared memory not set up yet).
func (c *Comm) shmPeerOf(w int) *shmPeer {
	t, ok := c.w.prog.(*shmTransport)
	if !ok || w == c.w.rank {
		return nil
	}
	return t.peers[w]
}

// sendDirect sends b to a shared-memory peer in good standing, a small message at once; it
// reports false (having done nothing) otherwise, and the general path, which also produces
// every error, takes the message.
//
// A large message goes by rendezvous as from Isend, but its RTS tells the receiver that the
// sender waits (polls) until the message is taken, which allows a split copy (see frameSplit);
// a patient sender does not poll (it sleeps), so its receiver copies the whole message.
func (c *Comm) sendDirect(b []byte, dst, tag int) (bool, error) {
	if dst < 0 || dst >= c.Size() || tag < 0 || tag >= MaxTag || c.w.closed.Load() || c.w.eng.ndead.Load() != 0 {
		return false, nil
	}
	p := c.shmPeerOf(c.WorldRank(dst))
	if p == nil || p.t.stopping.Load() {
		return false, nil
	}
	if len(b) > shmEagerLimit {
		req := newRequest()
		req.prog, req.patient = p.t, c.patient
		flags := uint8(flagSenderWaits)
		if c.patient {
			flags = 0
		}
		p.sendRTS(c.ctx, tag, b, req, flags)
		_, err := req.Wait()
		return true, err
	}
	return true, p.writeBlocking(&header{typ: frameEager, tag: int32(tag), ctx: c.ctx, length: uint64(len(b))}, b)
}

// recvDirect is Recv from one shared-memory peer with a reused receive operation. It reports
// false (having done nothing) where the general path must take the receive.
//
// A receive from a shared-memory peer completes successfully only in its caller's goroutine
// (the message was queued already) or in a goroutine draining the rings, which holds pollMu
// throughout: once the waiter has seen it finished and taken pollMu once, no one touches the
// operation any more and it can serve the next receive. One that ended in error (a failure,
// completed elsewhere) is left to the garbage collector.
func (c *Comm) recvDirect(b []byte, src, tag int) (bool, Status, error) {
	if src < 0 || src >= c.Size() || tag < 0 || tag >= MaxTag || c.w.closed.Load() {
		return false, Status{}, nil
	}
	ws := c.WorldRank(src)
	p := c.shmPeerOf(ws)
	if p == nil {
		return false, Status{}, nil
	}
	t := p.t
	r := t.freeRecv.Swap(nil)
	if r == nil {
		r = &recvOp{}
	}
	*r = recvOp{src: ws, ctx: c.ctx, tag: tag, buf: b, comm: c}
	r.req.prog, r.req.patient = t, c.patient
	c.w.eng.post(r)
	st, err := r.req.Wait()
	if err == nil {
		t.pollMu.Lock()
		//lint:ignore SA2001 an empty critical section: waits out a poller still completing r
		t.pollMu.Unlock()
		r.buf, r.comm = nil, nil // keep no user memory alive
		t.freeRecv.Store(r)
	}
	return true, st, err
}
