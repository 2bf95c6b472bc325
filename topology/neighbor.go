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
	// exchange runs as sends, then blocking receives (cartRun).
	cart bool
	// scratch holds cartRun's buffers between calls; a call takes it (Swap), so that calls
	// from several goroutines at once each have their own.
	scratch atomic.Pointer[cartScratch]
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

// layout is how a buffer is cut into the blocks of a neighbour collective's slots.
type layout struct {
	n              int   // elements per block, block i starting at i*n (counts == nil)
	counts, displs []int // or a size and an offset per block (alltoallv)
	whole          bool  // or every block is the whole buffer (allgather's send side)
}

// block is the block of slot i of buf (capacity clipped, so that no append reaches past it).
func block[T any](buf []T, l *layout, i int) []T {
	switch {
	case l.whole:
		return buf
	case l.counts != nil:
		d, c := l.displs[i], l.counts[i]
		return buf[d : d+c : d+c]
	}
	return buf[i*l.n : (i+1)*l.n : (i+1)*l.n]
}

// blocks lists the k blocks of buf.
func blocks[T any](buf []T, l layout, k int) [][]T {
	b := make([][]T, k)
	for i := range b {
		b[i] = block(buf, &l, i)
	}
	return b
}

// checkV checks that counts and displs describe k blocks that each lie in a buffer of n
// elements.
func checkV(n int, counts, displs []int, k int, what string) error {
	if len(counts) != k || len(displs) != k {
		return fmt.Errorf("%d %s counts and %d displacements for %d slots", len(counts), what, len(displs), k)
	}
	for i, c := range counts {
		if d := displs[i]; c < 0 || d < 0 || d > n || c > n-d {
			return fmt.Errorf("%s block %d (count %d at %d) outside the %d-element buffer", what, i, c, d, n)
		}
	}
	return nil
}

// run finishes a blocking neighbour collective whose arguments are checked (local: this
// rank's were bad): a Cartesian exchange with valid arguments by cartRun, anything else as a
// posted exchange that it waits for.
func run[T comm.Elem](nb *neighborhood, op string, send []T, sl layout, recv []T, rl layout, local error) error {
	if local == nil && nb.cart {
		return cartRun(nb, op, send, &sl, recv, &rl)
	}
	return start(nb, op, send, sl, recv, rl, local).finish()
}

// async starts a non-blocking neighbour collective: its messages are posted here, on the
// calling goroutine, so that calls issued in one order on every rank match, and waited for by
// the request.
func async[T comm.Elem](nb *neighborhood, op string, send []T, sl layout, recv []T, rl layout, local error) *comm.Request {
	return comm.Go(start(nb, op, send, sl, recv, rl, local).finish)
}

// exchange is one neighbour collective posted as non-blocking receives and sends (in slot
// order, on the calling goroutine, so that calls issued in the same order on every rank match
// even when they overlap); finish waits for them and unpacks the blocks.
type exchange[T comm.Elem] struct {
	nb      *neighborhood
	op      string
	seq     uint32
	local   error // this rank's own arguments were bad: it only sent refusals
	rblocks [][]T
	rbufs   [][]byte
	recvs   []*comm.Request
	sends   []*comm.Request
	bufs    []*[]byte // frames and receive buffers from bufPool, returned by finish
}

// bufPool recycles the message buffers of posted exchanges.
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

// start posts an exchange: block j of send to destination slot j, block i of recv from
// source slot i. With local set, the buffers are ignored: the rank sends a refusal to every
// destination and drains what its sources send.
func start[T comm.Elem](nb *neighborhood, op string, send []T, sl layout, recv []T, rl layout, local error) *exchange[T] {
	e := &exchange[T]{nb: nb, op: op, seq: nb.seq.Add(1), local: local}
	esize := elemSize[T]()
	e.rbufs, e.recvs = make([][]byte, len(nb.srcs)), make([]*comm.Request, len(nb.srcs))
	e.sends, e.bufs = make([]*comm.Request, len(nb.dsts)), make([]*[]byte, 0, len(nb.srcs)+len(nb.dsts))
	if local == nil {
		e.rblocks = blocks(recv, rl, len(nb.srcs))
	}
	for i, src := range nb.srcs {
		if src == ProcNull {
			continue
		}
		n := headerLen
		if local == nil {
			n += len(e.rblocks[i]) * esize
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
			b := block(send, &sl, j)
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
	return e
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
		if err := checkMsg(e.nb, e.op, e.seq, i, e.rbufs[i], len(e.rblocks[i]), esize, st, err); err != nil {
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

// cartScratch is what cartRun reuses from call to call: a frame per send that was still in
// flight when the next one was built, the receive frame, and the list of such sends.
type cartScratch struct {
	frames [][]byte
	rframe []byte
	pend   []*comm.Request
}

// keepMax: cartRun keeps a buffer for the next call up to this size; a larger one (a rare
// exchange of large blocks) is left to the garbage collector.
const keepMax = 1 << 20

// grow returns b resized to n bytes (contents undefined), reallocated when too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// cartRun runs a blocking Cartesian exchange with valid arguments the way a halo exchange of
// small blocks is best written by hand: every block is sent first, then each is received with
// a blocking Recv, then the sends still in flight are waited for. Isend of a small message to
// a shared-memory peer is buffered at once and a blocking Recv of one takes it without a
// Request, and the frames are the topology's own from the previous call, so the exchange
// allocates nothing there; all blocks are in flight together, so along a dimension of two
// ranks it costs one message's latency, where a Sendrecv towards +1 and then one towards -1
// costs two. Messages, tags and checks are those of start, so a neighbour on either path
// matches; every receive runs even after an error, so that none of this call's messages is
// left for the next.
func cartRun[T comm.Elem](nb *neighborhood, op string, send []T, sl *layout, recv []T, rl *layout) error {
	esize, seq := elemSize[T](), nb.seq.Add(1)
	sc := nb.scratch.Swap(nil)
	if sc == nil {
		sc = new(cartScratch)
	}
	var first error
	pend := sc.pend[:0]
	k := 0       // sc.frames[:k] belong to sends in flight
	var last []T // the block in lastFrame = sc.frames[lastK]
	var lastFrame []byte
	lastK := -1
	for j, dst := range nb.dsts {
		if dst == ProcNull {
			continue
		}
		b := block(send, sl, j)
		frame := lastFrame
		if len(b) == 0 || len(last) != len(b) || &last[0] != &b[0] {
			// A new frame, unless the same block went to the previous destination (allgather).
			if k == len(sc.frames) {
				sc.frames = append(sc.frames, nil)
			}
			frame = grow(sc.frames[k], headerLen+len(b)*esize)
			sc.frames[k] = frame
			putHeader(frame, kindData, esize, seq, len(b))
			copy(frame[headerLen:], comm.AsBytes(b))
			last, lastFrame, lastK = b, frame, k
		}
		r := comm.Isend(nb.c, frame, dst, nb.sendTags[j])
		if done, _, err := r.Test(); !done {
			// The frame is in use until r completes: the next one takes another buffer.
			pend = append(pend, r)
			if lastK == k {
				k++
			}
		} else if err != nil && first == nil {
			first = fmt.Errorf("topology: %s: %w", op, err)
		}
	}
	for i, src := range nb.srcs {
		if src == ProcNull {
			continue
		}
		b := block(recv, rl, i)
		rf := grow(sc.rframe, headerLen+len(b)*esize)
		sc.rframe = rf
		st, err := comm.Recv(nb.c, rf, src, nb.recvTags[i])
		if first != nil {
			continue
		}
		if cerr := checkMsg(nb, op, seq, i, rf, len(b), esize, st, err); cerr != nil {
			first = cerr
			continue
		}
		copy(comm.AsBytes(b), rf[headerLen:])
	}
	if err := comm.WaitAll(pend...); err != nil && first == nil {
		first = fmt.Errorf("topology: %s: %w", op, err)
	}
	clear(pend)
	sc.pend = pend[:0]
	for i, f := range sc.frames {
		if cap(f) > keepMax {
			sc.frames[i] = nil
		}
	}
	if cap(sc.rframe) > keepMax {
		sc.rframe = nil
	}
	nb.scratch.Store(sc)
	return first
}

// checkMsg validates msg, received in source slot i of call seq for a block of want
// elements of esize bytes with status st and error err.
func checkMsg(nb *neighborhood, op string, seq uint32, i int, msg []byte, want, esize int, st comm.Status, err error) error {
	src := nb.srcs[i]
	var te *comm.TruncateError
	if err != nil {
		if te = truncation(err); te == nil {
			return fmt.Errorf("topology: %s: receive from neighbour rank %d: %w", op, src, err)
		}
	}
	if te == nil && st.Count < headerLen {
		return fmt.Errorf("topology: %s: neighbour rank %d sent a %d-byte message, shorter than a header", op, src, st.Count)
	}
	kind, ses := msg[0], int(msg[1])
	mseq := binary.LittleEndian.Uint32(msg[4:])
	count := binary.LittleEndian.Uint64(msg[8:])
	switch {
	case kind == kindRefusal:
		return fmt.Errorf("topology: %s: neighbour rank %d rejected its arguments: %w", op, src, collectives.ErrMismatch)
	case kind != kindData:
		return fmt.Errorf("topology: %s: neighbour rank %d sent a message of unknown kind %d", op, src, kind)
	case mseq != seq:
		return fmt.Errorf("topology: %s: neighbour rank %d sent the message of its neighbour collective #%d, this rank is in #%d (calls in different orders?): %w",
			op, src, mseq, seq, collectives.ErrMismatch)
	case ses != esize:
		return fmt.Errorf("topology: %s: neighbour rank %d sent %d-byte elements, this rank expects %d-byte ones: %w", op, src, ses, esize, collectives.ErrMismatch)
	case count != uint64(want) || (te == nil && st.Count != headerLen+want*esize):
		return fmt.Errorf("topology: %s: neighbour rank %d sent a block of %d elements, this rank expects %d: %w", op, src, count, want, collectives.ErrMismatch)
	}
	return nil
}

// truncation returns the TruncateError in err's chain, or nil. A function of its own: the
// variable errors.As writes to lives on the heap, which a successful receive need not pay for.
func truncation(err error) *comm.TruncateError {
	var te *comm.TruncateError
	errors.As(err, &te)
	return te
}

// NeighborAllgather sends send to every destination of t and receives into recv one block of
// len(send) elements from each source, in slot order (MPI_Neighbor_allgather). recv holds a
// block per source slot, empty slots (ProcNull) included; those blocks are left as they were.
// Every rank of t calls it.
func NeighborAllgather[T comm.Elem](t Topology, send, recv []T) error {
	nb := t.neighborhood()
	sl, rl, err := allgatherArgs(nb, len(send), len(recv))
	return run(nb, "NeighborAllgather", send, sl, recv, rl, err)
}

// IneighborAllgather is the non-blocking NeighborAllgather; send and recv are in use until
// the request completes.
func IneighborAllgather[T comm.Elem](t Topology, send, recv []T) *comm.Request {
	nb := t.neighborhood()
	sl, rl, err := allgatherArgs(nb, len(send), len(recv))
	return async(nb, "NeighborAllgather", send, sl, recv, rl, err)
}

func allgatherArgs(nb *neighborhood, nsend, nrecv int) (sl, rl layout, err error) {
	if in := len(nb.srcs); nrecv != in*nsend {
		return sl, rl, fmt.Errorf("topology: NeighborAllgather: receive buffer of %d elements, want %d (%d slots x %d)", nrecv, in*nsend, in, nsend)
	}
	return layout{whole: true}, layout{n: nsend}, nil
}

// NeighborAlltoall sends block j of send to destination slot j and receives block i of recv
// from source slot i (MPI_Neighbor_alltoall): all blocks have one size, len(send) divided by
// the number of destination slots, which must equal len(recv) divided by the number of source
// slots. On a Cart it is a halo exchange: send block 2d goes to the -1 neighbour along d, and
// receive block 2d is the halo on that side. Blocks of empty slots are neither sent nor
// written. Every rank of t calls it.
func NeighborAlltoall[T comm.Elem](t Topology, send, recv []T) error {
	nb := t.neighborhood()
	l, err := alltoallArgs(nb, len(send), len(recv))
	return run(nb, "NeighborAlltoall", send, l, recv, l, err)
}

// IneighborAlltoall is the non-blocking NeighborAlltoall; send and recv are in use until the
// request completes.
func IneighborAlltoall[T comm.Elem](t Topology, send, recv []T) *comm.Request {
	nb := t.neighborhood()
	l, err := alltoallArgs(nb, len(send), len(recv))
	return async(nb, "NeighborAlltoall", send, l, recv, l, err)
}

func alltoallArgs(nb *neighborhood, nsend, nrecv int) (layout, error) {
	in, out := len(nb.srcs), len(nb.dsts)
	n := 0
	switch {
	case out > 0:
		n = nsend / out
	case in > 0:
		n = nrecv / in
	}
	if out*n != nsend || in*n != nrecv {
		return layout{}, fmt.Errorf("topology: NeighborAlltoall: send buffer of %d elements for %d destination slots and receive buffer of %d for %d source slots: want %d x n and %d x n",
			nsend, out, nrecv, in, out, in)
	}
	return layout{n: n}, nil
}

// NeighborAlltoallv is NeighborAlltoall with a size per block (MPI_Neighbor_alltoallv):
// block j of send is send[sdispls[j]:sdispls[j]+sendcounts[j]], block i of recv likewise with
// recvcounts and rdispls. A block's size must match the one its neighbour sends or expects.
func NeighborAlltoallv[T comm.Elem](t Topology, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) error {
	nb := t.neighborhood()
	err := alltoallvArgs(nb, len(send), sendcounts, sdispls, len(recv), recvcounts, rdispls)
	return run(nb, "NeighborAlltoallv", send, layout{counts: sendcounts, displs: sdispls}, recv, layout{counts: recvcounts, displs: rdispls}, err)
}

// IneighborAlltoallv is the non-blocking NeighborAlltoallv; send and recv are in use until
// the request completes (the counts and displacements only until it returns).
func IneighborAlltoallv[T comm.Elem](t Topology, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) *comm.Request {
	nb := t.neighborhood()
	err := alltoallvArgs(nb, len(send), sendcounts, sdispls, len(recv), recvcounts, rdispls)
	return async(nb, "NeighborAlltoallv", send, layout{counts: sendcounts, displs: sdispls}, recv, layout{counts: recvcounts, displs: rdispls}, err)
}

func alltoallvArgs(nb *neighborhood, nsend int, sendcounts, sdispls []int, nrecv int, recvcounts, rdispls []int) error {
	if err := checkV(nsend, sendcounts, sdispls, len(nb.dsts), "send"); err != nil {
		return fmt.Errorf("topology: NeighborAlltoallv: %w", err)
	}
	if err := checkV(nrecv, recvcounts, rdispls, len(nb.srcs), "receive"); err != nil {
		return fmt.Errorf("topology: NeighborAlltoallv: %w", err)
	}
	return nil
}
