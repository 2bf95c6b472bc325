package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Reduce combines send from every rank with op into recv on root (MPI_Reduce). len(send) must
// be the same everywhere and, on root, equal len(recv); recv is ignored elsewhere (nil is
// fine). On root, send == nil (or send the same slice as recv) is the in-place form.
//
// Small vectors go up a binomial tree; large ones (commutative ops) are reduce-scattered by
// recursive halving and the blocks gathered at root (Rabenseifner's reduce). Non-commutative
// ops are combined in rank order.
func Reduce[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T], root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Reduce", c, err)
	}
	return wrap("Reduce", c, reduce(cc, tag, send, recv, op, root, current()))
}

// Ireduce starts a Reduce.
func Ireduce[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T], root int) *comm.Request {
	cc, tag, err := begin(c)
	if err != nil {
		return failed("Ireduce", c, err)
	}
	return comm.Go(func() error { return wrap("Ireduce", c, reduce(cc, tag, send, recv, op, root, current())) })
}

func reduce[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, op Op[T], root int, t *Tuning) error {
	p, r := cc.Size(), cc.Rank()
	n := len(send)
	inPlace := r == root && (send == nil || sameSlice(send, recv))
	if inPlace {
		n = len(recv)
	}
	lerr := checkRoot(root, p)
	switch {
	case lerr != nil:
	case op.Err() != nil:
		lerr = op.Err()
	case r == root && len(recv) != n:
		lerr = fmt.Errorf("root's len(recv) = %d but len(send) = %d", len(recv), n)
	case n%op.unit != 0:
		lerr = fmt.Errorf("op %s needs (value, index) pairs: length %d is odd", op.Name(), n)
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "reduce", n: n, typ: typeName[T](), op: op.id, root: root}, lerr); err != nil {
		return err
	}
	if r == root && !inPlace {
		copy(recv, send)
	}
	if p == 1 || n == 0 {
		return nil
	}
	// The working vector: recv on root, a scratch copy of send elsewhere.
	acc := recv
	if r != root {
		var s scratch
		acc, s = scratchOf[T](n)
		defer s.release()
		copy(acc, send)
	}
	if t.reduceAlg(n*elemSize[T](), op.commute) == AlgReduceScatterGath && n >= newFold(p).pof2*op.unit {
		return reduceScatterGather(cc, tag, acc, op, root)
	}
	return binomialReduce(cc, tag, acc, op, root)
}

// binomialReduce: relative rank v receives the partial results of v+1, v+2, v+4, ... (each
// covering the next aligned range of ranks) and sends its own to v minus its lowest set bit.
// For a non-commutative op the tree is rooted at rank 0, so every partial covers a contiguous
// range of ranks in order, and rank 0 forwards the result to root.
func binomialReduce[T comm.Elem](cc *comm.Comm, tag int, acc []T, op Op[T], root int) error {
	p, r := cc.Size(), cc.Rank()
	treeRoot := root
	if !op.commute {
		treeRoot = 0
	}
	v := (r - treeRoot + p) % p
	abs := func(x int) int { return (x + treeRoot) % p }
	tmp, ts := scratchOf[T](len(acc))
	defer ts.release()
	work := acc
	if !op.commute && r == 0 && root != 0 {
		// Rank 0 accumulates in scratch and sends the result on to root.
		w, s := scratchOf[T](len(acc))
		defer s.release()
		copy(w, acc)
		work = w
	}
	for mask := 1; mask < p; mask <<= 1 {
		if v&mask != 0 {
			if err := sendTo(cc, work, abs(v-mask), tag); err != nil {
				return err
			}
			break
		}
		if v+mask < p {
			if err := recvExact(cc, tmp, abs(v+mask), tag); err != nil {
				return err
			}
			if op.commute {
				op.fn(tmp, work)
			} else {
				op.fn(work, tmp) // ours covers the lower ranks: work ⊕ tmp
				copy(work, tmp)
			}
		}
	}
	if !op.commute && root != 0 {
		switch r {
		case 0:
			return sendTo(cc, work, root, tag)
		case root:
			return recvExact(cc, acc, 0, tag)
		}
	}
	return nil
}

// reduceScatterGather: recursive halving leaves block i of the partition reduced on
// participant i; each sends it straight to root. Commutative ops only.
func reduceScatterGather[T comm.Elem](cc *comm.Comm, tag int, acc []T, op Op[T], root int) error {
	r := cc.Rank()
	f := newFold(cc.Size())
	tmp, ts := scratchOf[T](len(acc))
	defer ts.release()
	off := offsets(f.pof2)
	nr, err := foldAndHalve(cc, tag, acc, tmp, op, f, off)
	if err != nil {
		return err
	}
	if r != root {
		if nr >= 0 {
			return sendTo(cc, acc[off[nr]:off[nr+1]], root, tag)
		}
		return nil
	}
	reqs := make([]*comm.Request, 0, f.pof2)
	for b := 0; b < f.pof2; b++ {
		if b == nr {
			continue
		}
		reqs = append(reqs, comm.Irecv(cc, acc[off[b]:off[b+1]], f.real(b), tag))
	}
	var first error
	for i, q := range reqs {
		st, err := q.Wait()
		b := i
		if nr >= 0 && i >= nr {
			b++
		}
		if err := recvErr(st, err, (off[b+1]-off[b])*elemSize[T](), f.real(b)); err != nil && first == nil {
			first = err
		}
	}
	return first
}
