package core

import "sync"

// Rendezvous is the bookkeeping of large messages in flight with one peer, common to the
// transports that move them by request-to-send and clear-to-send (tcp, shm): the sends waiting
// for the peer's answer, the receives waiting for their data, and whether the link failed.
type Rendezvous struct {
	rank   int // the peer's world rank
	Mu     sync.Mutex
	nextID uint64
	Sends  map[uint64]*PendingSend
	Recvs  map[uint64]*PendingRecv
	Failed error
}

// PendingSend is a large send waiting for the peer's clear-to-send.
type PendingSend struct {
	Payload []byte
	Req     *Request
}

// PendingRecv is a matched receive of a large message waiting for its data: Got of Size
// bytes have come into Buf.
type PendingRecv struct {
	Op       *RecvOp
	Buf      []byte
	Size     uint64
	Got      uint64
	Src, Tag int
}

// NewRendezvous returns the bookkeeping for the link to world rank rank.
func NewRendezvous(rank int) Rendezvous {
	return Rendezvous{rank: rank, Sends: map[uint64]*PendingSend{}, Recvs: map[uint64]*PendingRecv{}}
}

// LinkError is the PeerError of a failed link, or nil. The caller holds z.Mu.
func (z *Rendezvous) LinkError() error {
	if z.Failed == nil {
		return nil
	}
	return &PeerError{Rank: z.rank, Err: z.Failed}
}

// AddSend registers a large send and returns its id; a failed link refuses it.
func (z *Rendezvous) AddSend(payload []byte, req *Request) (uint64, error) {
	z.Mu.Lock()
	defer z.Mu.Unlock()
	if err := z.LinkError(); err != nil {
		return 0, err
	}
	z.nextID++
	z.Sends[z.nextID] = &PendingSend{Payload: payload, Req: req}
	return z.nextID, nil
}

// TakeSend removes and returns a registered send (nil if unknown).
func (z *Rendezvous) TakeSend(id uint64) *PendingSend {
	z.Mu.Lock()
	defer z.Mu.Unlock()
	s := z.Sends[id]
	delete(z.Sends, id)
	return s
}

// AddRecv registers where a large message's data goes and returns the id the sender's data
// will name; a failed link refuses it.
func (z *Rendezvous) AddRecv(pr *PendingRecv) (uint64, error) {
	z.Mu.Lock()
	defer z.Mu.Unlock()
	if err := z.LinkError(); err != nil {
		return 0, err
	}
	z.nextID++
	z.Recvs[z.nextID] = pr
	return z.nextID, nil
}

// Recv returns a registered receive (nil if unknown).
func (z *Rendezvous) Recv(id uint64) *PendingRecv {
	z.Mu.Lock()
	defer z.Mu.Unlock()
	return z.Recvs[id]
}

// GotData records n more bytes of receive id's data, completing it when all have come.
func (z *Rendezvous) GotData(id uint64, pr *PendingRecv, n uint64) {
	pr.Got += n
	if pr.Got < pr.Size {
		return
	}
	z.Mu.Lock()
	delete(z.Recvs, id)
	z.Mu.Unlock()
	pr.Op.Req.Complete(pr.Op.Status(z.rank, pr.Tag, int(pr.Size)), nil)
}

// MarkFailed records the link's failure once and returns what was pending, for the caller to
// fail with failPending outside the lock. The caller holds z.Mu; first is false when the link
// had already failed.
func (z *Rendezvous) MarkFailed(cause error) (sends map[uint64]*PendingSend, recvs map[uint64]*PendingRecv, first bool) {
	if z.Failed != nil {
		return nil, nil, false
	}
	z.Failed = cause
	sends, recvs = z.Sends, z.Recvs
	z.Sends, z.Recvs = map[uint64]*PendingSend{}, map[uint64]*PendingRecv{}
	return sends, recvs, true
}

// FailPending fails the sends and receives MarkFailed returned with a PeerError of cause.
func (z *Rendezvous) FailPending(cause error, sends map[uint64]*PendingSend, recvs map[uint64]*PendingRecv) {
	perr := &PeerError{Rank: z.rank, Err: cause}
	for _, s := range sends {
		s.Req.Complete(Status{}, perr)
	}
	for _, r := range recvs {
		r.Op.Req.Complete(Status{}, perr)
	}
}
