package comm

import "sync"

// rendezvous is the bookkeeping of large messages in flight with one peer, common to the
// transports that move them by request-to-send and clear-to-send (tcp, shm): the sends waiting
// for the peer's answer, the receives waiting for their data, and whether the link failed.
type rendezvous struct {
	rank   int // the peer's world rank
	mu     sync.Mutex
	nextID uint64
	sends  map[uint64]*pendingSend
	recvs  map[uint64]*pendingRecv
	failed error
}

type pendingSend struct {
	payload []byte
	req     *Request
}

type pendingRecv struct {
	op       *recvOp
	buf      []byte
	size     uint64
	got      uint64
	src, tag int
}

func newRendezvous(rank int) rendezvous {
	return rendezvous{rank: rank, sends: map[uint64]*pendingSend{}, recvs: map[uint64]*pendingRecv{}}
}

// linkError is the PeerError of a failed link, or nil. The caller holds z.mu.
func (z *rendezvous) linkError() error {
	if z.failed == nil {
		return nil
	}
	return &PeerError{Rank: z.rank, Err: z.failed}
}

// addSend registers a large send and returns its id; a failed link refuses it.
func (z *rendezvous) addSend(payload []byte, req *Request) (uint64, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if err := z.linkError(); err != nil {
		return 0, err
	}
	z.nextID++
	z.sends[z.nextID] = &pendingSend{payload: payload, req: req}
	return z.nextID, nil
}

// takeSend removes and returns a registered send (nil if unknown).
func (z *rendezvous) takeSend(id uint64) *pendingSend {
	z.mu.Lock()
	defer z.mu.Unlock()
	s := z.sends[id]
	delete(z.sends, id)
	return s
}

// addRecv registers where a large message's data goes and returns the id the sender's data
// will name; a failed link refuses it.
func (z *rendezvous) addRecv(pr *pendingRecv) (uint64, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if err := z.linkError(); err != nil {
		return 0, err
	}
	z.nextID++
	z.recvs[z.nextID] = pr
	return z.nextID, nil
}

// recv returns a registered receive (nil if unknown).
func (z *rendezvous) recv(id uint64) *pendingRecv {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.recvs[id]
}

// gotData records n more bytes of receive id's data, completing it when all have come.
func (z *rendezvous) gotData(id uint64, pr *pendingRecv, n uint64) {
	pr.got += n
	if pr.got < pr.size {
		return
	}
	z.mu.Lock()
	delete(z.recvs, id)
	z.mu.Unlock()
	pr.op.req.complete(pr.op.status(z.rank, pr.tag, int(pr.size)), nil)
}

// markFailed records the link's failure once and returns what was pending, for the caller to
// fail with failPending outside the lock. The caller holds z.mu; first is false when the link
// had already failed.
func (z *rendezvous) markFailed(cause error) (sends map[uint64]*pendingSend, recvs map[uint64]*pendingRecv, first bool) {
	if z.failed != nil {
		return nil, nil, false
	}
	z.failed = cause
	sends, recvs = z.sends, z.recvs
	z.sends, z.recvs = map[uint64]*pendingSend{}, map[uint64]*pendingRecv{}
	return sends, recvs, true
}

func (z *rendezvous) failPending(cause error, sends map[uint64]*pendingSend, recvs map[uint64]*pendingRecv) {
	perr := &PeerError{Rank: z.rank, Err: cause}
	for _, s := range sends {
		s.req.complete(Status{}, perr)
	}
	for _, r := range recvs {
		r.op.req.complete(Status{}, perr)
	}
}
