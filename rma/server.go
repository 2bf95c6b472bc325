package rma

import (
	"errors"
	"fmt"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// Accumulate ops travel as a code: MPI allows only predefined ops in one-sided calls, so the
// target rebuilds the same op for its element type.
const (
	opReplace = iota + 1
	opSum
	opProd
	opMin
	opMax
	opMaxLoc
	opMinLoc
	opAnd
	opOr
	opXor
	opEnd
)

var opNames = map[string]uint8{
	replaceName: opReplace, "Sum": opSum, "Prod": opProd, "Min": opMin, "Max": opMax,
	"MaxLoc": opMaxLoc, "MinLoc": opMinLoc, "And": opAnd, "Or": opOr, "Xor": opXor,
}

const replaceName = "rma.Replace"

// Replace is MPI_REPLACE for Accumulate: the target element becomes the origin's, with
// Accumulate's atomicity.
func Replace[T comm.Elem]() collectives.Op[T] {
	return collectives.NewOp[T](replaceName, false, func(in, inout []T) { copy(inout, in) })
}

// opCode checks op for an Accumulate of n elements at off and returns its code.
func opCode[T comm.Elem](op collectives.Op[T], off, n int) (uint8, error) {
	if err := op.Err(); err != nil {
		return 0, err
	}
	code, ok := opNames[op.Name()]
	if !ok {
		return 0, fmt.Errorf("op %q is not predefined (one-sided calls take collectives' predefined ops or Replace)", op.Name())
	}
	if (code == opMaxLoc || code == opMinLoc) && (off%2 != 0 || n%2 != 0) {
		return 0, fmt.Errorf("%s works on (value, index) pairs: offset %d and length %d must be even", op.Name(), off, n)
	}
	return code, nil
}

func opOf[T comm.Elem](code uint8) (collectives.Op[T], error) {
	switch code {
	case opReplace:
		return Replace[T](), nil
	case opSum:
		return collectives.Sum[T](), nil
	case opProd:
		return collectives.Prod[T](), nil
	case opMin:
		return collectives.Min[T](), nil
	case opMax:
		return collectives.Max[T](), nil
	case opMaxLoc:
		return collectives.MaxLoc[T](), nil
	case opMinLoc:
		return collectives.MinLoc[T](), nil
	case opAnd:
		return collectives.And[T](), nil
	case opOr:
		return collectives.Or[T](), nil
	case opXor:
		return collectives.Xor[T](), nil
	}
	return collectives.Op[T]{}, fmt.Errorf("unknown accumulate op code %d", code)
}

// applyOp sets dst[i] = src[i] op dst[i].
func applyOp[T comm.Elem](code uint8, src, dst []T) error {
	op, err := opOf[T](code)
	if err != nil {
		return err
	}
	if err := op.Err(); err != nil {
		return err
	}
	return op.Apply(src, dst)
}

// lockState is one rank's passive-target lock, kept by its serving goroutine.
type lockState struct {
	exclusive bool
	shared    int
	waiting   []lockWait // in arrival order
}

type lockWait struct {
	rank  int
	typ   LockType
	reply int
}

// serve is the target side of the message path: it takes requests from any rank in arrival
// order until Free sends it kindStop (or the communicator fails).
func (w *Win[T]) serve() {
	defer close(w.srvDone)
	// A patient view: between requests the goroutine sleeps instead of polling, leaving the
	// core to the rank's computation.
	pc := w.c.Patient()
	maxReq := hdrLen + w.sizes[w.rank]*w.esize
	var locks lockState
	note := func(err error) {
		if w.srvErr == nil {
			w.srvErr = err
		}
	}
	var dead []bool // after a peer failure: the ranks known gone
	for {
		var st comm.Status
		var err error
		if dead == nil {
			st, err = pc.Probe(comm.AnySource, reqTag)
			var pe *comm.PeerError
			if errors.As(err, &pe) {
				// comm fails a wait on any source once some rank is gone; the others may still
				// lock and access this rank, so serve them by polling them one by one.
				note(fmt.Errorf("waiting for requests: %w", err))
				dead = make([]bool, len(w.sizes))
				continue
			}
		} else {
			st, err = w.pollLive(pc, dead)
		}
		if err != nil {
			if !errors.Is(err, comm.ErrClosed) {
				note(fmt.Errorf("waiting for requests: %w", err))
			}
			return
		}
		if st.Count > maxReq {
			// Take the message into a header-sized buffer (comm discards the rest) and drop it.
			var hdr [hdrLen]byte
			_, _ = comm.Recv(pc, hdr[:], st.Source, reqTag)
			note(fmt.Errorf("rank %d sent a %d-byte request; the largest this window takes is %d", st.Source, st.Count, maxReq))
			continue
		}
		msg := make([]byte, st.Count)
		if _, err := comm.Recv(pc, msg, st.Source, reqTag); err != nil {
			note(fmt.Errorf("receiving a request from rank %d: %w", st.Source, err))
			return
		}
		h, data, err := decode(msg, len(w.local), w.esize)
		if err != nil {
			note(fmt.Errorf("rank %d: %w", st.Source, err))
			continue
		}
		if h.kind == kindStop {
			if st.Source == w.rank {
				return
			}
			note(fmt.Errorf("rank %d sent a stop request", st.Source))
			continue
		}
		if err := w.handle(pc, st.Source, h, data, &locks); err != nil {
			note(fmt.Errorf("request from rank %d: %w", st.Source, err))
		}
	}
}

// decode parses and validates a request for a window of n elements of esize bytes: the kind,
// the range, the data length, the op and the lock type. Requests come from other processes,
// so nothing in them is trusted.
func decode(msg []byte, n, esize int) (h header, data []byte, err error) {
	if h, err = parseHeader(msg); err != nil {
		return h, nil, err
	}
	data = msg[hdrLen:]
	switch h.kind {
	case kindPut, kindAcc, kindGet:
		if h.off > uint64(n) || h.n > uint64(n)-h.off {
			return h, nil, fmt.Errorf("elements [%d, %d+%d) outside this rank's window of %d", h.off, h.off, h.n, n)
		}
		want := 0
		if h.kind != kindGet {
			want = int(h.n) * esize
		}
		if len(data) != want {
			return h, nil, fmt.Errorf("%d elements announced, %d bytes of data", h.n, len(data))
		}
		if h.kind == kindAcc && (h.op < opReplace || h.op >= opEnd) {
			return h, nil, fmt.Errorf("unknown accumulate op code %d", h.op)
		}
	case kindLock:
		if lt := LockType(h.lock); lt != Shared && lt != Exclusive {
			return h, nil, fmt.Errorf("lock type %d", h.lock)
		}
	case kindFlush, kindUnlock, kindStop:
	default:
		return h, nil, fmt.Errorf("unknown request kind %d", h.kind)
	}
	return h, data, nil
}

// pollLive waits for a request from a rank not in dead, marking the ranks comm reports gone,
// and sleeping a little between rounds that find nothing. It fails when this rank's own
// communicator does (ErrClosed after Finalize).
func (w *Win[T]) pollLive(pc *comm.Comm, dead []bool) (comm.Status, error) {
	for {
		for r := range dead {
			if dead[r] {
				continue
			}
			st, ok, err := pc.Iprobe(r, reqTag)
			if err != nil {
				var pe *comm.PeerError
				if r == w.rank || !errors.As(err, &pe) {
					return st, err
				}
				dead[r] = true
				continue
			}
			if ok {
				return st, nil
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// handle carries out one decoded request from rank src.
func (w *Win[T]) handle(pc *comm.Comm, src int, h header, data []byte, locks *lockState) error {
	off, cnt := int(h.off), int(h.n)
	switch h.kind {
	case kindPut, kindAcc:
		vals := make([]T, cnt)
		copy(comm.AsBytes(vals), data)
		w.mem.Lock()
		var err error
		if h.kind == kindPut {
			copy(w.local[off:], vals)
		} else {
			err = applyOp(h.op, vals, w.local[off:off+cnt])
		}
		w.mem.Unlock()
		return err
	case kindGet:
		out := make([]T, cnt)
		w.mem.Lock()
		copy(out, w.local[off:off+cnt])
		w.mem.Unlock()
		return comm.Send(pc, comm.AsBytes(out), src, int(h.reply))
	case kindFlush:
		// Requests from one rank are handled in order: every earlier one is applied.
		return comm.Send(pc, []byte{}, src, int(h.reply))
	case kindLock:
		locks.waiting = append(locks.waiting, lockWait{rank: src, typ: LockType(h.lock), reply: int(h.reply)})
		return w.grant(pc, locks)
	case kindUnlock:
		switch {
		case locks.exclusive:
			locks.exclusive = false
		case locks.shared > 0:
			locks.shared--
		default:
			return errors.New("unlock of a rank not locked")
		}
		err := comm.Send(pc, []byte{}, src, int(h.reply))
		if gerr := w.grant(pc, locks); err == nil {
			err = gerr
		}
		return err
	}
	return fmt.Errorf("unknown request kind %d", h.kind)
}

// grant gives the lock to waiters from the head of the queue while they are compatible with
// the holders: one exclusive, or a run of shared ones.
func (w *Win[T]) grant(pc *comm.Comm, locks *lockState) error {
	var firstErr error
	for len(locks.waiting) > 0 && !locks.exclusive {
		next := locks.waiting[0]
		if next.typ == Exclusive {
			if locks.shared > 0 {
				break
			}
			locks.exclusive = true
		} else {
			locks.shared++
		}
		locks.waiting = locks.waiting[1:]
		if err := comm.Send(pc, []byte{}, next.rank, next.reply); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}
