//go:build linux || darwin

package comm

// Blocking Send and Recv of small messages to and from a shared-memory peer allocate nothing:
// the send writes its record at once (it never needed a Request), and the receive reuses one
// recvOp per world. Allocations per round trip would make the heap grow into fresh pages,
// each one a page fault, and a longer run pay the same in GC cycles, whose workers take a
// core from a spinning rank.

// sendDirect sends b to the shared-memory peer, a small message at once, when the link is in
// good standing; it reports false (having done nothing) otherwise, and the general path, which
// also produces every error, takes the message. The caller checked the arguments.
//
// A large message goes by rendezvous as from Isend, but its RTS tells the receiver that the
// sender waits (polls) until the message is taken, which allows a split copy (see frameSplit);
// a patient sender does not poll (it sleeps), so its receiver copies the whole message.
func (p *shmPeer) eagerMax() int { return shmEagerLimit }

func (p *shmPeer) sendDirect(c *Comm, b []byte, tag int) (bool, error) {
	if p.t.stopping.Load() {
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

// recvDirect is Recv from the shared-memory peer (world rank ws) with a reused receive
// operation. The caller checked the arguments.
//
// A receive from a shared-memory peer completes successfully only in its caller's goroutine
// (the message was queued already) or in a goroutine draining the rings, which holds pollMu
// throughout: once the waiter has seen it finished and taken pollMu once, no one touches the
// operation any more and it can serve the next receive. One that ended in error (a failure,
// completed elsewhere) is left to the garbage collector.
func (p *shmPeer) recvDirect(c *Comm, b []byte, ws, tag int) (bool, Status, error) {
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
