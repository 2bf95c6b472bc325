package rma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// LockType is the kind of a passive-target lock.
type LockType uint8

const (
	// Shared lets other shared lockers access the target at the same time (MPI_LOCK_SHARED).
	Shared LockType = 1
	// Exclusive excludes every other lock on the target (MPI_LOCK_EXCLUSIVE).
	Exclusive LockType = 2
)

func (l LockType) String() string {
	switch l {
	case Shared:
		return "shared"
	case Exclusive:
		return "exclusive"
	}
	return fmt.Sprintf("LockType(%d)", uint8(l))
}

var (
	// ErrNoEpoch is returned by an access to a rank outside any epoch that covers it.
	ErrNoEpoch = errors.New("no access epoch: call Fence, or Lock the target")
	// ErrFreed is returned by every call on a window after Free.
	ErrFreed = errors.New("window is freed")
	// ErrOtherRank is the cause on the ranks whose collective call (Create, Allocate, Fence,
	// Free) failed because another rank's call was wrong.
	ErrOtherRank = errors.New("another rank's call failed")
)

// ShmVar names the environment variable that, set to "0", keeps Allocate from mapping shared
// segments: every rank other than the caller is then reached by messages.
const ShmVar = "GORUN_RMA_SHM"

// Tags on the window's private communicator: requests to a serving goroutine on reqTag, the
// creation's setup messages on setupTag, replies on tags from replyBase up, one per request.
const (
	reqTag    = 0
	setupTag  = 1
	replyBase = 16
	replySpan = 1 << 28
)

// Request kinds.
const (
	kindPut = iota + 1
	kindGet
	kindAcc
	kindFlush
	kindLock
	kindUnlock
	kindStop
)

const hdrLen = 32

// maxWinBytes bounds one rank's window, so that sizes summed over a host's ranks (a shared
// segment's layout) cannot overflow.
const maxWinBytes = 1 << 46

// header is a request's fixed part: kind, op, lock type, reply tag, offset, count (elements).
type header struct {
	kind, op, lock uint8
	reply          uint32
	off, n         uint64
}

func (h header) put(b []byte) {
	b[0], b[1], b[2], b[3] = h.kind, h.op, h.lock, 0
	binary.LittleEndian.PutUint32(b[4:], h.reply)
	binary.LittleEndian.PutUint64(b[8:], h.off)
	binary.LittleEndian.PutUint64(b[16:], h.n)
	binary.LittleEndian.PutUint64(b[24:], 0)
}

func parseHeader(b []byte) (header, error) {
	if len(b) < hdrLen {
		return header{}, fmt.Errorf("request of %d bytes, shorter than its %d-byte header", len(b), hdrLen)
	}
	return header{kind: b[0], op: b[1], lock: b[2], reply: binary.LittleEndian.Uint32(b[4:]),
		off: binary.LittleEndian.Uint64(b[8:]), n: binary.LittleEndian.Uint64(b[16:])}, nil
}

// Win is a window: a []T on every rank of a communicator that every rank may access.
// Its methods are safe for concurrent use by the goroutines of one rank.
type Win[T comm.Elem] struct {
	c        *comm.Comm // private duplicate: requests, replies, fences
	rank     int
	sizes    []int // elements exposed by each rank
	esize    int
	local    []T
	mem      locker   // guards local against concurrent operations
	direct   [][]T    // elements of the ranks reached by direct access (this rank's own included)
	dlock    []locker // their locks
	seg      *segment // nil without a shared segment
	segNote  string   // why the window has no segment, for Path
	srvDone  chan struct{}
	srvErr   error // first bad request the serving goroutine saw (read after srvDone)
	replySeq atomic.Uint32

	mu        sync.Mutex
	freed     bool
	fenceOpen bool
	locked    map[int]LockType
	pending   map[int]bool // ranks sent Puts/Accumulates by message since their last completion
}

// locker is a mutual exclusion over one rank's elements: a sync.Mutex for private memory, a
// spin lock word in the shared segment for memory other processes access too.
type locker interface {
	Lock()
	Unlock()
}

type spinLock struct{ w *uint32 }

func (s spinLock) Lock() {
	for i := 0; !atomic.CompareAndSwapUint32(s.w, 0, 1); i++ {
		if i > 64 {
			runtime.Gosched()
		}
	}
}

func (s spinLock) Unlock() { atomic.StoreUint32(s.w, 0) }

// Create makes a window over buf on every rank of c (MPI_Win_create): the elements stay in the
// caller's slice, which it reads and writes with Local inside its own epochs; every other rank
// reaches them by messages. Collective.
func Create[T comm.Elem](c *comm.Comm, buf []T) (*Win[T], error) {
	return newWin(c, len(buf), buf, false)
}

// Allocate makes a window of n elements per rank (n may differ between ranks), zeroed
// (MPI_Win_allocate): on ranks sharing a host the elements live in one shared segment, so those
// ranks access each other's directly. Local returns this rank's elements. Collective.
func Allocate[T comm.Elem](c *comm.Comm, n int) (*Win[T], error) {
	return newWin[T](c, n, nil, true)
}

func newWin[T comm.Elem](c *comm.Comm, n int, buf []T, alloc bool) (*Win[T], error) {
	if c == nil {
		return nil, errors.New("rma: nil communicator")
	}
	pc, err := c.Dup()
	if err != nil {
		return nil, fmt.Errorf("rma: duplicating the communicator: %w", err)
	}
	var zero T
	esize := int(unsafe.Sizeof(zero))
	var bad error
	switch {
	case n < 0:
		bad = fmt.Errorf("rma: window of %d elements", n)
	case n > maxWinBytes/esize:
		bad = fmt.Errorf("rma: window of %d elements of %d bytes: more than %d bytes", n, esize, maxWinBytes)
	}
	// Every rank learns every rank's length, element size and verdict, so all fail together.
	mine := []int64{int64(n), int64(esize), 0}
	if bad != nil {
		mine[2] = 1
	}
	all := make([]int64, 3*pc.Size())
	if err := collectives.Allgather(pc, mine, all); err != nil {
		return nil, fmt.Errorf("rma: exchanging window sizes: %w", err)
	}
	if bad != nil {
		return nil, bad
	}
	w := &Win[T]{c: pc, rank: pc.Rank(), esize: esize, sizes: make([]int, pc.Size()),
		locked: map[int]LockType{}, pending: map[int]bool{}, srvDone: make(chan struct{})}
	for r := range w.sizes {
		if all[3*r+2] != 0 {
			return nil, fmt.Errorf("rma: rank %d: bad window arguments: %w", r, ErrOtherRank)
		}
		if all[3*r+1] != int64(esize) {
			return nil, fmt.Errorf("rma: rank %d's elements are %d bytes, this rank's %d: %w",
				r, all[3*r+1], esize, ErrOtherRank)
		}
		w.sizes[r] = int(all[3*r])
	}
	w.direct = make([][]T, pc.Size())
	w.dlock = make([]locker, pc.Size())
	if alloc {
		if err := w.mapSegment(); err != nil {
			return nil, err
		}
	} else {
		w.local = buf
		w.segNote = "Create: the caller's memory"
	}
	if w.seg == nil {
		if w.local == nil {
			w.local = make([]T, n)
		}
		w.mem = &sync.Mutex{}
		w.direct[w.rank], w.dlock[w.rank] = w.local, w.mem
	}
	go w.serve()
	return w, nil
}

// mapSegment puts the elements of the ranks of each host in one shared segment when every rank
// of c agrees to, and otherwise leaves them private. Collective.
func (w *Win[T]) mapSegment() error {
	me := w.rank
	var group []int
	for r := range w.sizes {
		if w.c.HostID(r) == w.c.HostID(me) {
			group = append(group, r)
		}
	}
	want := os.Getenv(ShmVar) != "0" && len(group) > 1
	if !want {
		w.segNote = "no other rank on this host"
		if len(group) > 1 {
			w.segNote = ShmVar + "=0"
		}
	}
	// Lay out the group: a 64-byte lock word per member, then each member's elements, each
	// part 64-byte aligned.
	offs := make([]int, len(group))
	total := 64 * len(group)
	for i, r := range group {
		offs[i] = total
		total += (w.sizes[r]*w.esize + 63) &^ 63
	}
	leader := group[0]
	var seg *segment
	failed := int64(0)
	if want {
		var name string
		var err error
		if me == leader {
			seg, err = createSegment(total)
			if err == nil {
				name = seg.path
			}
			for _, r := range group[1:] {
				if serr := w.c.SendValue(name, r, setupTag); serr != nil {
					return fmt.Errorf("rma: sending the segment name to rank %d: %w", r, serr)
				}
			}
		} else {
			if _, rerr := w.c.RecvValue(&name, leader, setupTag); rerr != nil {
				return fmt.Errorf("rma: receiving the segment name from rank %d: %w", leader, rerr)
			}
			if name == "" {
				err = errors.New("the host's first rank could not create it")
			} else {
				seg, err = openSegment(name, total)
			}
		}
		if err != nil {
			failed = 1
			w.segNote = "shared segment failed: " + err.Error()
		}
	}
	// One verdict for the whole communicator: a host whose segment failed anywhere takes the
	// message path; after this exchange every rank of the host has mapped the segment.
	verdict := make([]int64, 1)
	if err := collectives.Allreduce(w.c, []int64{failed}, verdict, collectives.Max[int64]()); err != nil {
		if seg != nil {
			seg.close()
		}
		return fmt.Errorf("rma: agreeing on shared segments: %w", err)
	}
	if seg != nil && me == leader {
		seg.unlink()
	}
	if verdict[0] != 0 {
		if seg != nil {
			seg.close()
		}
		if failed == 0 && want {
			w.segNote = "a shared segment failed on some host"
		}
		return nil
	}
	if seg == nil {
		return nil
	}
	w.seg = seg
	w.segNote = ""
	for i, r := range group {
		var p []T
		if w.sizes[r] > 0 {
			p = unsafe.Slice((*T)(unsafe.Pointer(&seg.mem[offs[i]])), w.sizes[r])
		} else {
			p = []T{}
		}
		w.direct[r] = p
		w.dlock[r] = spinLock{(*uint32)(unsafe.Pointer(&seg.mem[64*i]))}
		if r == me {
			w.local, w.mem = p, w.dlock[r]
		}
	}
	return nil
}

// Local is this rank's elements. Read and write them only where no other rank may access them
// at the same time (between fences, or under an exclusive lock of this rank).
func (w *Win[T]) Local() []T { return w.local }

// Comm is the window's own communicator (a duplicate of the one it was made from).
func (w *Win[T]) Comm() *comm.Comm { return w.c }

// Len is the number of elements rank r exposes.
func (w *Win[T]) Len(r int) int {
	if r < 0 || r >= len(w.sizes) {
		return 0
	}
	return w.sizes[r]
}

// Direct reports whether this rank reaches rank r's elements by direct access in a shared
// segment (or its own memory) rather than by messages.
func (w *Win[T]) Direct(r int) bool { return r >= 0 && r < len(w.direct) && w.direct[r] != nil }

// Path says how this rank reaches the others: "direct" for all, "messages" for all but itself,
// or a mix, with the reason when a shared segment was not used.
func (w *Win[T]) Path() string {
	d := 0
	for r := range w.direct {
		if w.direct[r] != nil {
			d++
		}
	}
	s := "mixed"
	switch {
	case d == len(w.direct):
		s = "direct"
	case d == 1:
		s = "messages"
	}
	if w.segNote != "" {
		s += " (" + w.segNote + ")"
	}
	return s
}

// check validates an access to [off, off+n) of rank t and that an epoch covers it.
func (w *Win[T]) check(what string, t, off, n int) error {
	if w.freed {
		return fmt.Errorf("rma: %s: %w", what, ErrFreed)
	}
	if t < 0 || t >= len(w.sizes) {
		return fmt.Errorf("rma: %s: rank %d outside the window's %d ranks", what, t, len(w.sizes))
	}
	if off < 0 || n < 0 || off > w.sizes[t] || n > w.sizes[t]-off {
		return fmt.Errorf("rma: %s: elements [%d, %d+%d) outside rank %d's window of %d", what, off, off, n, t, w.sizes[t])
	}
	if !w.fenceOpen {
		if _, ok := w.locked[t]; !ok {
			return fmt.Errorf("rma: %s to rank %d: %w", what, t, ErrNoEpoch)
		}
	}
	return nil
}

// Put copies src into rank t's elements [off, off+len(src)) (MPI_Put).
func (w *Win[T]) Put(t, off int, src []T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("Put", t, off, len(src)); err != nil {
		return err
	}
	if d := w.direct[t]; d != nil {
		w.dlock[t].Lock()
		copy(d[off:], src)
		w.dlock[t].Unlock()
		return nil
	}
	return w.sendData(t, header{kind: kindPut, off: uint64(off), n: uint64(len(src))}, src)
}

// Get copies rank t's elements [off, off+len(dst)) into dst (MPI_Get); dst holds them on return.
func (w *Win[T]) Get(t, off int, dst []T) error {
	w.mu.Lock()
	if err := w.check("Get", t, off, len(dst)); err != nil {
		w.mu.Unlock()
		return err
	}
	if d := w.direct[t]; d != nil {
		w.dlock[t].Lock()
		copy(dst, d[off:off+len(dst)])
		w.dlock[t].Unlock()
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	return w.roundTrip(t, header{kind: kindGet, off: uint64(off), n: uint64(len(dst))}, comm.AsBytes(dst))
}

// Accumulate combines src into rank t's elements [off, off+len(src)) with op, as
// target[i] = src[i] op target[i] (MPI_Accumulate). op is one of collectives' predefined ops
// or Replace.
func (w *Win[T]) Accumulate(t, off int, src []T, op collectives.Op[T]) error {
	code, err := opCode(op, off, len(src))
	if err != nil {
		return fmt.Errorf("rma: Accumulate: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("Accumulate", t, off, len(src)); err != nil {
		return err
	}
	if d := w.direct[t]; d != nil {
		w.dlock[t].Lock()
		err := applyOp(code, src, d[off:off+len(src)])
		w.dlock[t].Unlock()
		return err
	}
	return w.sendData(t, header{kind: kindAcc, op: code, off: uint64(off), n: uint64(len(src))}, src)
}

// sendData sends a Put or Accumulate request with its data to t's serving goroutine.
// Called with w.mu held.
func (w *Win[T]) sendData(t int, h header, src []T) error {
	msg := make([]byte, hdrLen+len(src)*w.esize)
	h.put(msg)
	copy(msg[hdrLen:], comm.AsBytes(src))
	if err := comm.Send(w.c, msg, t, reqTag); err != nil {
		return fmt.Errorf("rma: request to rank %d: %w", t, err)
	}
	w.pending[t] = true
	return nil
}

func (w *Win[T]) nextReply() uint32 {
	return replyBase + w.replySeq.Add(1)%replySpan
}

// roundTrip sends a request to t's serving goroutine and waits for its reply into dst.
func (w *Win[T]) roundTrip(t int, h header, dst []byte) error {
	h.reply = w.nextReply()
	req := comm.Irecv(w.c, dst, t, int(h.reply))
	msg := make([]byte, hdrLen)
	h.put(msg)
	if err := comm.Send(w.c, msg, t, reqTag); err != nil {
		// comm cannot cancel the receive: it ends when the failed link fails it.
		return fmt.Errorf("rma: request to rank %d: %w", t, err)
	}
	if _, err := req.Wait(); err != nil {
		return fmt.Errorf("rma: reply from rank %d: %w", t, err)
	}
	return nil
}

// Flush completes every Put and Accumulate this rank issued to rank t: on return they are
// applied at t (MPI_Win_flush). It needs an epoch covering t.
func (w *Win[T]) Flush(t int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("Flush", t, 0, 0); err != nil {
		return err
	}
	return w.flush([]int{t})
}

// flush completes the message-path operations to ts. Called with w.mu held.
func (w *Win[T]) flush(ts []int) error {
	var reqs []*comm.Request
	var firstErr error
	for _, t := range ts {
		if !w.pending[t] {
			continue
		}
		h := header{kind: kindFlush, reply: w.nextReply()}
		req := comm.Irecv(w.c, []byte{}, t, int(h.reply))
		msg := make([]byte, hdrLen)
		h.put(msg)
		if err := comm.Send(w.c, msg, t, reqTag); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("rma: flush of rank %d: %w", t, err)
			}
			continue
		}
		reqs = append(reqs, req)
		delete(w.pending, t)
	}
	if err := comm.WaitAll(reqs...); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("rma: flush: %w", err)
	}
	return firstErr
}

// Fence completes every operation issued in the window since the previous fence, on every rank,
// and opens a new access epoch on all of them (MPI_Win_fence). Collective.
func (w *Win[T]) Fence() error { return w.fence("Fence", true) }

// FenceEnd is Fence opening no new epoch (MPI_Win_fence with MPI_MODE_NOSUCCEED), so that
// passive-target Lock may follow. Collective.
func (w *Win[T]) FenceEnd() error { return w.fence("FenceEnd", false) }

func (w *Win[T]) fence(what string, open bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.freed {
		return fmt.Errorf("rma: %s: %w", what, ErrFreed)
	}
	if err := w.complete(what); err != nil {
		return err
	}
	w.fenceOpen = open
	return nil
}

// complete flushes every pending operation and agrees with every rank that all did so, or that
// some rank's call was wrong. Called with w.mu held.
func (w *Win[T]) complete(what string) error {
	var bad error
	if len(w.locked) > 0 {
		bad = fmt.Errorf("rma: %s while holding %d passive-target lock(s): Unlock first", what, len(w.locked))
	} else {
		var ts []int
		for t := range w.pending {
			ts = append(ts, t)
		}
		bad = w.flush(ts)
	}
	flag := int64(0)
	if bad != nil {
		flag = 1
	}
	verdict := make([]int64, 1)
	if err := collectives.Allreduce(w.c, []int64{flag}, verdict, collectives.Max[int64]()); err != nil {
		return fmt.Errorf("rma: %s: %w", what, err)
	}
	if bad != nil {
		return bad
	}
	if verdict[0] != 0 {
		return fmt.Errorf("rma: %s: %w", what, ErrOtherRank)
	}
	return nil
}

// Lock opens a passive-target epoch on rank t (MPI_Win_lock), waiting until t grants the lock.
// It is refused inside a fence epoch (call FenceEnd first) and for a rank this one holds.
func (w *Win[T]) Lock(t int, lt LockType) error {
	w.mu.Lock()
	if w.freed {
		w.mu.Unlock()
		return fmt.Errorf("rma: Lock: %w", ErrFreed)
	}
	if t < 0 || t >= len(w.sizes) {
		w.mu.Unlock()
		return fmt.Errorf("rma: Lock: rank %d outside the window's %d ranks", t, len(w.sizes))
	}
	if lt != Shared && lt != Exclusive {
		w.mu.Unlock()
		return fmt.Errorf("rma: Lock of rank %d: %v is neither Shared nor Exclusive", t, lt)
	}
	if w.fenceOpen {
		w.mu.Unlock()
		return fmt.Errorf("rma: Lock of rank %d inside a fence epoch: call FenceEnd first", t)
	}
	if held, ok := w.locked[t]; ok {
		w.mu.Unlock()
		return fmt.Errorf("rma: Lock of rank %d: already held (%v)", t, held)
	}
	w.mu.Unlock()
	// The grant may take as long as other ranks hold t; other goroutines of this rank go on.
	if err := w.roundTrip(t, header{kind: kindLock, lock: uint8(lt)}, []byte{}); err != nil {
		return err
	}
	w.mu.Lock()
	w.locked[t] = lt
	w.mu.Unlock()
	return nil
}

// Unlock completes every operation to rank t and releases the lock Lock took (MPI_Win_unlock).
func (w *Win[T]) Unlock(t int) error {
	w.mu.Lock()
	if w.freed {
		w.mu.Unlock()
		return fmt.Errorf("rma: Unlock: %w", ErrFreed)
	}
	if _, ok := w.locked[t]; !ok {
		w.mu.Unlock()
		return fmt.Errorf("rma: Unlock of rank %d: not locked by this rank", t)
	}
	// The serving goroutine handles t's requests from this rank in order, so its reply to the
	// unlock follows every Put and Accumulate sent before.
	delete(w.pending, t)
	w.mu.Unlock()
	if err := w.roundTrip(t, header{kind: kindUnlock}, []byte{}); err != nil {
		return err
	}
	w.mu.Lock()
	delete(w.locked, t)
	w.mu.Unlock()
	return nil
}

// Free completes every operation, stops the window's serving goroutine and unmaps its memory
// (MPI_Win_free). Collective; the window is unusable afterwards, and Local's slice too for a
// window from Allocate.
func (w *Win[T]) Free() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.freed {
		return fmt.Errorf("rma: Free: %w", ErrFreed)
	}
	if err := w.complete("Free"); err != nil {
		return err
	}
	w.freed = true
	// Every rank has completed its operations: no request for this rank follows the stop.
	msg := make([]byte, hdrLen)
	header{kind: kindStop}.put(msg)
	if err := comm.Send(w.c, msg, w.rank, reqTag); err != nil {
		return fmt.Errorf("rma: Free: stopping the serving goroutine: %w", err)
	}
	<-w.srvDone
	// A serving goroutine waits for requests from any rank, and comm fails that wait once some
	// rank has left: no rank leaves before every serving goroutine has stopped.
	if err := collectives.Barrier(w.c); err != nil {
		return fmt.Errorf("rma: Free: %w", err)
	}
	if w.seg != nil {
		// Direct accesses are synchronous and every rank's were issued before the exchange in
		// complete, so no rank of the host touches the segment any more.
		w.seg.close()
		w.seg = nil
	}
	w.local = nil
	if w.srvErr != nil {
		return fmt.Errorf("rma: Free: the serving goroutine refused a request: %w", w.srvErr)
	}
	return nil
}
