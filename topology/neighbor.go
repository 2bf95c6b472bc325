package topology

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// Topology is a communicator with neighbours, over which the neighbour collectives run:
// a *Cart or a *DistGraph.
type Topology interface {
	// Comm is the topology's communicator, for the program's own messages.
	Comm() *comm.Comm
	// Neighbors returns the receive slots (sources) and send slots (destinations) in the
	// order the neighbour collectives use; ProcNull marks an empty slot.
	Neighbors() (sources, destinations []int)
	neighborhood() *neighborhood
}

// neighborhood is what the neighbour collectives need of a topology: a private communicator,
// the slots and the tag of each slot's messages.
type neighborhood struct {
	c                  *comm.Comm // a duplicate of the topology's communicator, for these calls only
	srcs, dsts         []int
	recvTags, sendTags []int
	seq                atomic.Uint32 // neighbour collectives started on this rank
	// cart: slots 2d and 2d+1 are the -1 and +1 neighbours along dimension d, and a blocking
	// exchange runs as sends, then blocking receives (sendsFirst).
	cart bool
}

// A message of a neighbour collective is a 16-byte header and the block:
// kind (1 byte), element size (1), unused (2), call sequence number (4), element count (8).
const (
	headerLen   = 16
	kindData    = 1
	kindRefusal = 2
)

func putHeader(b []byte, kind byte, esize int, seq uint32, count int) {
	b[0], b[1] = kind, byte(esize)
	binary.LittleEndian.PutUint32(b[4:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(count))
}

// exchange is one neighbour collective in flight: its receives and sends are posted (in slot
// order, on the calling goroutine, so that calls issued in the same order on every rank match
// even when they overlap) and finish waits for them and unpacks the blocks.
type exchange[T comm.Elem] struct {
	nb      *neighborhood
	op      string
	seq     uint32
	local   error // this rank's own arguments were bad: it only sent refusals
	rblocks [][]T
	sblocks [][]T
	posted  bool
	rbufs   [][]byte
	recvs   []*comm.Request
	sends   []*comm.Request
	bufs    []*[]byte // frames and receive buffers from bufPool, returned by finish
	// bufArr and rbufArr back bufs and rbufs for a neighbourhood of up to 2 dimensions (a
	// frame and a receive buffer per slot), so that a halo exchange allocates no slices.
	bufArr  [8]*[]byte
	rbufArr [4][]byte
}

// bufPool recycles the message buffers of neighbour collectives, which a halo exchange in a
// loop would otherwise allocate on every call.
var bufPool sync.Pool // of *[]byte

// buf returns a buffer of n bytes (contents undefined) that finish returns to the pool.
func (e *exchange[T]) buf(n int) []byte {
	p, ok := bufPool.Get().(*[]byte)
	if !ok || cap(*p) < n {
		b := make([]byte, n)
		p = &b
	}
	*p = (*p)[:n]
	e.bufs = append(e.bufs, p)
	return *p
}

func elemSize[T comm.Elem]() int { var z T; return int(unsafe.Sizeof(z)) }

// start posts the exchange: block j of sblocks to destination slot j, block i of rblocks from
// source slot i. With local set, the blocks are ignored: the rank sends a refusal to every
// destination and drains what its sources send.
func start[T comm.Elem](nb *neighborhood, op string, sblocks, rblocks [][]T, local error) *exchange[T] {
	e := &exchange[T]{nb: nb, op: op, seq: nb.seq.Add(1), local: local, rblocks: rblocks, sblocks: sblocks}
	e.bufs = e.bufArr[:0]
	if local == nil && nb.cart {
		return e // posted by run (sendsFirst) or post
	}
	e.post()
	return e
}

// run finishes a blocking call: a Cartesian exchange with valid arguments runs sends first,
// anything else is posted and waited for.
func (e *exchange[T]) run() error {
	if e.local == nil && e.nb.cart {
		return e.sendsFirst()
	}
	return e.finish()
}

// async finishes a non-blocking call: the messages are posted here, on the calling
// goroutine, so that calls issued in one order on every rank match, and waited for by the
// request.
func (e *exchange[T]) async() *comm.Request {
	if !e.posted {
		e.post()
	}
	return comm.Go(e.finish)
}

// post posts the exchange's receives and sends.
func (e *exchange[T]) post() {
	nb, local, rblocks, sblocks := e.nb, e.local, e.rblocks, e.sblocks
	esize := elemSize[T]()
	e.rbufs, e.recvs = make([][]byte, len(nb.srcs)), make([]*comm.Request, len(nb.srcs))
	e.sends, e.bufs = make([]*comm.Request, len(nb.dsts)), make([]*[]byte, 0, len(nb.srcs)+len(nb.dsts))
	e.posted = true
	for i, src := range nb.srcs {
		if src == ProcNull {
			continue
		}
		n := headerLen
		if local == nil {
			n += len(rblocks[i]) * esize
		}
		e.rbufs[i] = e.buf(n)
		e.recvs[i] = comm.Irecv(nb.c, e.rbufs[i], src, nb.recvTags[i])
	}
	var refusal []byte
	if local != nil {
		refusal = e.buf(headerLen)
		putHeader(refusal, kindRefusal, esize, e.seq, 0)
	}
	var last []T
	var lastFrame []byte
	for j, dst := range nb.dsts {
		if dst == ProcNull {
			continue
		}
		frame := refusal
		if local == nil {
			b := sblocks[j]
			if len(b) > 0 && len(last) == len(b) && &last[0] == &b[0] {
				frame = lastFrame // the same block to several neighbours (allgather): one frame
			} else {
				frame = e.buf(headerLen + len(b)*esize)
				putHeader(frame, kindData, esize, e.seq, len(b))
				copy(frame[headerLen:], comm.AsBytes(b))
				last, lastFrame = b, frame
			}
		}
		e.sends[j] = comm.Isend(nb.c, frame, dst, nb.sendTags[j])
	}
}

// frame is block b of the call as a message: the header and the elements.
func (e *exchange[T]) frame(b []T) []byte {
	f := e.buf(headerLen + len(b)*elemSize[T]())
	putHeader(f, kindData, elemSize[T](), e.seq, len(b))
	copy(f[headerLen:], comm.AsBytes(b))
	return f
}

// sendsFirst runs a Cartesian exchange the way a halo exchange of small blocks is best written
// by hand: every block is sent first, then each is received with a blocking Recv, then the
// sends are waited for. Isend of a small message to a shared-memory peer is buffered at once
// and a blocking Recv of one takes it without a Request, so the exchange allocates no
// Request there, and all blocks are in flight together: along a dimension of two ranks it
// costs one message's latency, where a Sendrecv towards +1 and then one towards -1 costs two.
// Messages, tags and checks are those of post, so a neighbour on either path matches; every
// receive runs even after an error, so that none of this call's messages is left for the next.
func (e *exchange[T]) sendsFirst() error {
	nb, esize := e.nb, elemSize[T]()
	if len(nb.srcs) <= len(e.rbufArr) {
		e.rbufs = e.rbufArr[:len(nb.srcs)]
	} else {
		e.rbufs = make([][]byte, len(nb.srcs))
	}
	var first error
	var pendBuf [8]*comm.Request
	pend := pendBuf[:0] // sends not complete when posted
	for j, dst := range nb.dsts {
		if dst == ProcNull {
			continue
		}
		r := comm.Isend(nb.c, e.frame(e.sblocks[j]), dst, nb.sendTags[j])
		if done, _, err := r.Test(); !done {
			pend = append(pend, r)
		} else if err != nil && first == nil {
			first = fmt.Errorf("topology: %s: %w", e.op, err)
		}
	}
	for i, src := range nb.srcs {
		if src == ProcNull {
			continue
		}
		rb := e.buf(headerLen + len(e.rblocks[i])*esize)
		e.rbufs[i] = rb
		st, err := comm.Recv(nb.c, rb, src, nb.recvTags[i])
		if first != nil {
			continue
		}
		if cerr := e.check(i, st, err, esize); cerr != nil {
			first = cerr
			continue
		}
		copy(comm.AsBytes(e.rblocks[i]), rb[headerLen:])
	}
	if err := comm.WaitAll(pend...); err != nil && first == nil {
		first = fmt.Errorf("topology: %s: %w", e.op, err)
	}
	for _, p := range e.bufs {
		bufPool.Put(p)
	}
	e.bufs = nil
	return first
}

// finish waits for every message of the exchange and checks and unpacks the received blocks.
// It always waits for all of them, so no buffer is in use when it returns.
func (e *exchange[T]) finish() error {
	var first error
	esize := elemSize[T]()
	for i, req := range e.recvs {
		if req == nil {
			continue
		}
		st, err := req.Wait()
		if e.local != nil || first != nil {
			continue
		}
		if err := e.check(i, st, err, esize); err != nil {
			first = err
			continue
		}
		copy(comm.AsBytes(e.rblocks[i]), e.rbufs[i][headerLen:])
	}
	serr := comm.WaitAll(e.sends...)
	for _, p := range e.bufs { // no message uses them any more
		bufPool.Put(p)
	}
	e.bufs = nil
	switch {
	case e.local != nil:
		return e.local
	case first != nil:
		return first
	case serr != nil:
		return fmt.Errorf("topology: %s: %w", e.op, serr)
	}
	return nil
}

// check validates the message received in source slot i.
func (e *exchange[T]) check(i int, st comm.Status, err error, esize int) error {
	src, b := e.nb.srcs[i], e.rbufs[i]
	var te *comm.TruncateError
	if err != nil && !errors.As(err, &te) {
		return fmt.Errorf("topology: %s: receive from neighbour rank %d: %w", e.op, src, err)
	}
	if te == nil && st.Count < headerLen {
		return fmt.Errorf("topology: %s: neighbour rank %d sent a %d-byte message, shorter than a header", e.op, src, st.Count)
	}
	kind, ses := b[0], int(b[1])
	seq := binary.LittleEndian.Uint32(b[4:])
	count := binary.LittleEndian.Uint64(b[8:])
	want := len(e.rblocks[i])
	switch {
	case kind == kindRefusal:
		return fmt.Errorf("topology: %s: neighbour rank %d rejected its arguments: %w", e.op, src, collectives.ErrMismatch)
	case kind != kindData:
		return fmt.Errorf("topology: %s: neighbour rank %d sent a message of unknown kind %d", e.op, src, kind)
	case seq != e.seq:
		return fmt.Errorf("topology: %s: neighbour rank %d sent the message of its neighbour collective #%d, this rank is in #%d (calls in different orders?): %w",
			e.op, src, seq, e.seq, collectives.ErrMismatch)
	case ses != esize:
		return fmt.Errorf("topology: %s: neighbour rank %d sent %d-byte elements, this rank expects %d-byte ones: %w", e.op, src, ses, esize, collectives.ErrMismatch)
	case count != uint64(want) || (te == nil && st.Count != headerLen+want*esize):
		return fmt.Errorf("topology: %s: neighbour rank %d sent a block of %d elements, this rank expects %d: %w", e.op, src, count, want, collectives.ErrMismatch)
	}
	return nil
}

// NeighborAllgather sends send to every destination of t and receives into recv one block of
// len(send) elements from each source, in slot order (MPI_Neighbor_allgather). recv holds a
// block per source slot, empty slots (ProcNull) included; those blocks are left as they were.
// Every rank of t calls it.
func NeighborAllgather[T comm.Elem](t Topology, send, recv []T) error {
	return neighborAllgather(t, send, recv).run()
}

// IneighborAllgather is the non-blocking NeighborAllgather; send and recv are in use until
// the request completes.
func IneighborAllgather[T comm.Elem](t Topology, send, recv []T) *comm.Request {
	return neighborAllgather(t, send, recv).async()
}

func neighborAllgather[T comm.Elem](t Topology, send, recv []T) *exchange[T] {
	const op = "NeighborAllgather"
	nb := t.neighborhood()
	in, n := len(nb.srcs), len(send)
	if len(recv) != in*n {
		return start[T](nb, op, nil, nil, fmt.Errorf("topology: %s: receive buffer of %d elements, want %d (%d slots x %d)", op, len(recv), in*n, in, n))
	}
	sb := make([][]T, len(nb.dsts))
	for j := range sb {
		sb[j] = send
	}
	return start(nb, op, sb, blocks(recv, in, n), nil)
}

// NeighborAlltoall sends block j of send to destination slot j and receives block i of recv
// from source slot i (MPI_Neighbor_alltoall): all blocks have one size, len(send) divided by
// the number of destination slots, which must equal len(recv) divided by the number of source
// slots. On a Cart it is a halo exchange: send block 2d goes to the -1 neighbour along d, and
// receive block 2d is the halo on that side. Blocks of empty slots are neither sent nor
// written. Every rank of t calls it.
func NeighborAlltoall[T comm.Elem](t Topology, send, recv []T) error {
	return neighborAlltoall(t, send, recv).run()
}

// IneighborAlltoall is the non-blocking NeighborAlltoall; send and recv are in use until the
// request completes.
func IneighborAlltoall[T comm.Elem](t Topology, send, recv []T) *comm.Request {
	return neighborAlltoall(t, send, recv).async()
}

func neighborAlltoall[T comm.Elem](t Topology, send, recv []T) *exchange[T] {
	const op = "NeighborAlltoall"
	nb := t.neighborhood()
	in, out := len(nb.srcs), len(nb.dsts)
	n, local := 0, error(nil)
	switch {
	case out > 0:
		n = len(send) / out
	case in > 0:
		n = len(recv) / in
	}
	if out*n != len(send) || in*n != len(recv) {
		local = fmt.Errorf("topology: %s: send buffer of %d elements for %d destination slots and receive buffer of %d for %d source slots: want %d x n and %d x n",
			op, len(send), out, len(recv), in, out, in)
	}
	if local != nil {
		return start[T](nb, op, nil, nil, local)
	}
	return start(nb, op, blocks(send, out, n), blocks(recv, in, n), nil)
}

// NeighborAlltoallv is NeighborAlltoall with a size per block (MPI_Neighbor_alltoallv):
// block j of send is send[sdispls[j]:sdispls[j]+sendcounts[j]], block i of recv likewise with
// recvcounts and rdispls. A block's size must match the one its neighbour sends or expects.
func NeighborAlltoallv[T comm.Elem](t Topology, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) error {
	return neighborAlltoallv(t, send, sendcounts, sdispls, recv, recvcounts, rdispls).run()
}

// IneighborAlltoallv is the non-blocking NeighborAlltoallv.
func IneighborAlltoallv[T comm.Elem](t Topology, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) *comm.Request {
	return neighborAlltoallv(t, send, sendcounts, sdispls, recv, recvcounts, rdispls).async()
}

func neighborAlltoallv[T comm.Elem](t Topology, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) *exchange[T] {
	const op = "NeighborAlltoallv"
	nb := t.neighborhood()
	sb, err := vblocks(send, sendcounts, sdispls, len(nb.dsts), "send")
	if err != nil {
		return start[T](nb, op, nil, nil, fmt.Errorf("topology: %s: %w", op, err))
	}
	rb, err := vblocks(recv, recvcounts, rdispls, len(nb.srcs), "receive")
	if err != nil {
		return start[T](nb, op, nil, nil, fmt.Errorf("topology: %s: %w", op, err))
	}
	return start(nb, op, sb, rb, nil)
}

// blocks cuts buf into k consecutive blocks of n elements.
func blocks[T any](buf []T, k, n int) [][]T {
	b := make([][]T, k)
	for i := range b {
		b[i] = buf[i*n : (i+1)*n : (i+1)*n]
	}
	return b
}

// vblocks cuts buf into k blocks by counts and displacements, checking that each lies in buf.
func vblocks[T any](buf []T, counts, displs []int, k int, what string) ([][]T, error) {
	if len(counts) != k || len(displs) != k {
		return nil, fmt.Errorf("%d %s counts and %d displacements for %d slots", len(counts), what, len(displs), k)
	}
	b := make([][]T, k)
	for i := range b {
		c, d := counts[i], displs[i]
		if c < 0 || d < 0 || d > len(buf) || c > len(buf)-d {
			return nil, fmt.Errorf("%s block %d (count %d at %d) outside the %d-element buffer", what, i, c, d, len(buf))
		}
		b[i] = buf[d : d+c : d+c]
	}
	return b, nil
}
