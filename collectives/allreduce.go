package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Allreduce combines send from every rank with op and leaves the result in recv on every rank
// (MPI_Allreduce). len(send) must equal len(recv) and be the same on every rank. send == nil
// (or send and recv the same slice) is the in-place form: recv holds this rank's input.
//
// The algorithm depends on the vector's size and the rank count (see Tuning): recursive
// doubling for small vectors, Rabenseifner's reduce-scatter + allgather for medium ones, a
// pipelined ring for large ones; non-commutative ops always use recursive doubling, which
// combines in rank order. Every rank gets bitwise the same result.
func Allreduce[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T]) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Allreduce", c, err)
	}
	return wrap("Allreduce", c, allreduce(cc, tag, send, recv, op, current()))
}

// Iallreduce starts an Allreduce and returns at once; the buffers must not be touched until the
// request completes. Non-blocking collectives on one communicator must be started in the same
// order on every rank (as in MPI); they may overlap each other and point-to-point traffic.
func Iallreduce[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T]) *comm.Request {
	cc, tag, err := begin(c)
	if err != nil {
		return failed("Iallreduce", c, err)
	}
	return comm.Go(func() error { return wrap("Iallreduce", c, allreduce(cc, tag, send, recv, op, current())) })
}

func wrap(name string, c *comm.Comm, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("collectives: %s (rank %d of %d): %w", name, c.Rank(), c.Size(), err)
}

func allreduce[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, op Op[T], t *Tuning) error {
	n := len(recv)
	lerr := op.Err()
	switch {
	case lerr != nil:
	case send != nil && len(send) != n:
		lerr = fmt.Errorf("len(send) = %d but len(recv) = %d", len(send), n)
	case n%op.unit != 0:
		lerr = fmt.Errorf("op %s needs (value, index) pairs: length %d is odd", op.Name(), n)
	}
	p := cc.Size()
	nbytes := n * elemSize[T]()
	alg := t.allreduceAlg(nbytes, p, op.commute, layoutOf(cc).shape)
	if send != nil && sameSlice(send, recv) {
		send = nil
	}
	// The ring reads send where it is and needs no copy of it in recv (see ringAllreduce);
	// every other path works in recv.
	ring := alg == AlgRing && op.commute && p > 1 && n > 0
	if lerr == nil && send != nil && !ring {
		copy(recv, send)
		send = nil
	}
	s := sig{coll: "allreduce", n: n, typ: typeName[T](), op: op.id}
	// With the check on, a small vector rides in the check's exchange; with it off, the plain
	// recursive doubling below moves only the data.
	if alg == AlgRecursiveDoubling && nbytes <= t.fuseLimit() && t.Check {
		return rdCheck(cc, tag, recv, op.fn, op.commute, -1, s, lerr, t.fuseLimit())
	}
	if err := agreeOrLocal(t, cc, tag, s, lerr); err != nil {
		return err
	}
	if p == 1 || n == 0 {
		return nil
	}
	if ring {
		return ringAllreduce(cc, tag, send, recv, op, t.RingSegment)
	}
	if alg == AlgHierarchical && op.commute {
		return hierAllreduce(cc, tag, recv, op, t)
	}
	return allreduceWith(cc, tag, recv, op, alg, t)
}

// allreduceWith runs one flat algorithm, after the check (recursive doubling where the named
// one does not apply).
func allreduceWith[T comm.Elem](cc *comm.Comm, tag int, data []T, op Op[T], alg string, t *Tuning) error {
	switch alg {
	case AlgRabenseifner:
		if op.commute && len(data) >= newFold(cc.Size()).pof2*op.unit {
			return rabenseifner(cc, tag, data, op)
		}
	case AlgRing:
		if op.commute {
			return ringAllreduce(cc, tag, nil, data, op, t.RingSegment)
		}
	case AlgDirect:
		if op.commute {
			return directAllreduce(cc, tag, data, op, t.RingSegment)
		}
	}
	return rdAllreduce(cc, tag, data, op)
}

// rdAllreduce is recursive doubling over the whole vector: log2(p) exchanges of n elements
// (plus two for non-power-of-two p). Latency-optimal; combines in rank order.
func rdAllreduce[T comm.Elem](cc *comm.Comm, tag int, data []T, op Op[T]) error {
	p, r := cc.Size(), cc.Rank()
	tmp, ts := scratchOf[T](len(data))
	defer ts.release()
	f := newFold(p)
	nr := f.newRank(r)
	if r < 2*f.rem {
		if nr < 0 {
			if err := sendTo(cc, data, r+1, tag); err != nil {
				return err
			}
		} else {
			if err := recvExact(cc, tmp, r-1, tag); err != nil {
				return err
			}
			op.fn(tmp, data)
		}
	}
	if nr >= 0 {
		for mask := 1; mask < f.pof2; mask <<= 1 {
			peer := f.real(nr ^ mask)
			if err := sendrecvExact(cc, data, peer, tmp, peer, tag); err != nil {
				return err
			}
			if peer < r || op.commute {
				op.fn(tmp, data)
			} else {
				op.fn(data, tmp)
				copy(data, tmp)
			}
		}
	}
	if r < 2*f.rem {
		if nr >= 0 {
			return sendTo(cc, data, r-1, tag)
		}
		return recvExact(cc, data, r+1, tag)
	}
	return nil
}

// rabenseifner is reduce-scatter by recursive halving followed by allgather by recursive
// doubling: 2*log2(p) steps moving 2n(p-1)/p elements in all. Commutative ops only.
func rabenseifner[T comm.Elem](cc *comm.Comm, tag int, data []T, op Op[T]) error {
	r := cc.Rank()
	f := newFold(cc.Size())
	tmp, ts := scratchOf[T](len(data))
	defer ts.release()
	off := offsets(f.pof2)
	nr, err := foldAndHalve(cc, tag, data, tmp, op, f, off)
	if err != nil {
		return err
	}
	if nr >= 0 {
		// Allgather by recursive doubling: after the step with distance d every participant
		// holds the reduced blocks of its aligned group of 2d participants.
		for d := 1; d < f.pof2; d <<= 1 {
			pnr := nr ^ d
			peer := f.real(pnr)
			my, their := nr&^(d-1), pnr&^(d-1)
			if err := sendrecvExact(cc, data[off[my]:off[my+d]], peer, data[off[their]:off[their+d]], peer, tag); err != nil {
				return err
			}
		}
	}
	if r < 2*f.rem {
		if nr >= 0 {
			return sendTo(cc, data, r-1, tag)
		}
		return recvExact(cc, data, r+1, tag)
	}
	return nil
}

// foldAndHalve reduces a non-power-of-two group to f.pof2 participants (even ranks among the
// first 2*rem hand their vector to their odd neighbour) and runs recursive halving among them:
// afterwards participant nr holds block nr (of the partition off, filled here) fully reduced in
// data. It returns nr, or -1 on a folded-out rank. Commutative ops only.
func foldAndHalve[T comm.Elem](cc *comm.Comm, tag int, data, tmp []T, op Op[T], f fold, off []int) (int, error) {
	r := cc.Rank()
	nr := f.newRank(r)
	partition(len(data), f.pof2, op.unit, off)
	if r < 2*f.rem {
		if nr < 0 {
			return -1, sendTo(cc, data, r+1, tag)
		}
		if err := recvExact(cc, tmp, r-1, tag); err != nil {
			return nr, err
		}
		op.fn(tmp, data)
	}
	lo, hi := 0, f.pof2
	for d := f.pof2 / 2; d >= 1; d /= 2 {
		peer := f.real(nr ^ d)
		mid := lo + d
		keepLo, keepHi, sendLo, sendHi := lo, mid, mid, hi
		if nr&d != 0 {
			keepLo, keepHi, sendLo, sendHi = mid, hi, lo, mid
		}
		keep := data[off[keepLo]:off[keepHi]]
		in := tmp[:len(keep)]
		if err := sendrecvExact(cc, data[off[sendLo]:off[sendHi]], peer, in, peer, tag); err != nil {
			return nr, err
		}
		op.fn(in, keep)
		lo, hi = keepLo, keepHi
	}
	return nr, nil
}

// ringAllreduce is the bandwidth-optimal ring: a reduce-scatter then an allgather around the
// ranks, each of p-1 steps moving one block of n/p elements. Blocks travel in segments of
// seg bytes so that reducing one segment overlaps receiving the next, and a reduced segment is
// forwarded at once. Commutative ops only.
//
// With send nil the input is in data (in place) and each incoming partial lands in scratch
// before it is combined into data. Otherwise the input is read from send, which is left
// untouched, and data needs no copy of it: every block of data other than this rank's own is
// written first by the receive of its partial sum, which is then combined with send's block
// in place; this rank's own block is sent from send and filled by the allgather.
func ringAllreduce[T comm.Elem](cc *comm.Comm, tag int, send, data []T, op Op[T], seg int) error {
	p, r := cc.Size(), cc.Rank()
	next, prev := (r+1)%p, (r-1+p)%p
	off := offsets(p)
	partition(len(data), p, op.unit, off)
	segElems := max(seg/elemSize[T]()/op.unit, 1) * op.unit
	var tmp []T
	if send == nil {
		var ts scratch
		tmp, ts = scratchOf[T](off[1] - off[0])
		defer ts.release()
	}
	block := func(b int) []T { return data[off[b]:off[b+1]] }
	input := block
	if send != nil {
		input = func(b int) []T { return send[off[b]:off[b+1]] }
	}
	isendSegs := func(buf []T, reqs []*comm.Request) []*comm.Request {
		for i := 0; i < len(buf) || i == 0; i += segElems {
			reqs = append(reqs, comm.Isend(cc, buf[i:min(i+segElems, len(buf))], next, tag))
		}
		return reqs
	}
	nsegs := func(n int) int { return max((n+segElems-1)/segElems, 1) }
	var sends, nextSends []*comm.Request
	var recvs []*comm.Request
	fail := func(err error) error {
		comm.WaitAll(sends...)
		comm.WaitAll(nextSends...)
		comm.WaitAll(recvs...)
		return err
	}

	// Reduce-scatter: at step s rank r sends block r-s and reduces block r-s-1 arriving from
	// prev; after p-1 steps it holds block r+1 fully reduced.
	sends = isendSegs(input(r), nil)
	for s := 0; s < p-1; s++ {
		bi := (r - s - 1 + 2*p) % p
		b := block(bi)
		// The partial arrives in in and is combined into b: in scratch over b's own values
		// (in place), or in b itself over send's values.
		in, own := b, input(bi)
		if send == nil {
			in = tmp[:len(b)]
		}
		recvs = recvs[:0]
		for i, k := 0, 0; k < nsegs(len(b)); i, k = i+segElems, k+1 {
			recvs = append(recvs, comm.Irecv(cc, in[i:min(i+segElems, len(in))], prev, tag))
		}
		nextSends = nextSends[:0]
		for k, i := 0, 0; k < len(recvs); k, i = k+1, i+segElems {
			j := min(i+segElems, len(b))
			st, err := recvs[k].Wait()
			if err := recvErr(st, err, (j-i)*elemSize[T](), prev); err != nil {
				return fail(err)
			}
			recvs[k] = nil
			if send == nil {
				op.fn(in[i:j], b[i:j])
			} else {
				op.fn(own[i:j], b[i:j])
			}
			// Forwarded at once: to the next step, and from the last step (block r+1 is
			// then reduced) as the allgather's first send, which so overlaps the rest of
			// the reduce-scatter instead of waiting for its end. The receiver matches it
			// after that step's segments: same tag, same pair, in order.
			nextSends = append(nextSends, comm.Isend(cc, b[i:j], next, tag))
		}
		if err := comm.WaitAll(sends...); err != nil {
			return fail(err)
		}
		sends, nextSends = nextSends, sends
	}

	// Allgather: at step s rank r sends block r+1-s (step 0's segments are on their way) and
	// receives block r-s in place, forwarding each segment as soon as it lands.
	for s := 0; s < p-1; s++ {
		b := block((r - s + p) % p)
		recvs = recvs[:0]
		for i, k := 0, 0; k < nsegs(len(b)); i, k = i+segElems, k+1 {
			recvs = append(recvs, comm.Irecv(cc, b[i:min(i+segElems, len(b))], prev, tag))
		}
		nextSends = nextSends[:0]
		for k, i := 0, 0; k < len(recvs); k, i = k+1, i+segElems {
			j := min(i+segElems, len(b))
			st, err := recvs[k].Wait()
			if err := recvErr(st, err, (j-i)*elemSize[T](), prev); err != nil {
				return fail(err)
			}
			recvs[k] = nil
			if s < p-2 {
				nextSends = append(nextSends, comm.Isend(cc, b[i:j], next, tag))
			}
		}
		if err := comm.WaitAll(sends...); err != nil {
			return fail(err)
		}
		sends, nextSends = nextSends, sends
	}
	return comm.WaitAll(sends...)
}

// directAllreduce is for a small, fully connected set of ranks (a full mesh of links, as four
// Mac Studios cabled pairwise by Thunderbolt): rank r owns block r of the vector; every rank
// sends each other block straight to its owner and receives its own block from every peer, all
// posted at once, so all p(p-1) directed links carry data simultaneously; the owner reduces
// what arrived; then every rank sends its reduced block to every peer (a direct allgather). Two
// steps whatever p, moving 2n(p-1)/p elements per rank as the ring does, but over p-1 links at
// a time instead of one, where the ring leaves all but two of each rank's links idle.
// Reduce-scatter traffic moves in segments (seg bytes across all peers, double-buffered), so
// reducing one overlaps receiving the next. The owner combines in a fixed order, so results are
// reproducible and bitwise the same on every rank. Commutative ops only.
func directAllreduce[T comm.Elem](cc *comm.Comm, tag int, data []T, op Op[T], seg int) error {
	p, r := cc.Size(), cc.Rank()
	off := offsets(p)
	partition(len(data), p, op.unit, off)
	block := func(b int) []T { return data[off[b]:off[b+1]] }
	mine := block(r)
	// Segment per peer: seg bytes spread over the p-1 incoming streams.
	segElems := max(seg/elemSize[T]()/(p-1)/op.unit, 1) * op.unit
	nsegs := max((off[1]-off[0]+segElems-1)/segElems, 1) // block 0 is the largest
	tmp, ts := scratchOf[T](2 * (p - 1) * segElems)
	defer ts.release()
	segOf := func(b []T, k int) []T { return b[min(k*segElems, len(b)):min((k+1)*segElems, len(b))] }
	// slot is where peer q's contribution to segment k of our block lands.
	slot := func(k, q int) []T {
		i := (k%2)*(p-1) + (q-r-1+p)%p
		return tmp[i*segElems : i*segElems+len(segOf(mine, k))]
	}
	recvs := make([][]*comm.Request, 2)
	var sends []*comm.Request
	fail := func(err error) error {
		comm.WaitAll(sends...)
		comm.WaitAll(recvs[0]...)
		comm.WaitAll(recvs[1]...)
		return err
	}
	post := func(k int) {
		rq := recvs[k%2][:0]
		if len(segOf(mine, k)) > 0 {
			for i := 1; i < p; i++ {
				q := (r + i) % p
				rq = append(rq, comm.Irecv(cc, slot(k, q), q, tag))
			}
		}
		recvs[k%2] = rq
		for i := 1; i < p; i++ {
			q := (r + i) % p
			if s := segOf(block(q), k); len(s) > 0 {
				sends = append(sends, comm.Isend(cc, s, q, tag))
			}
		}
	}
	post(0)
	for k := 0; k < nsegs; k++ {
		if k+1 < nsegs {
			post(k + 1)
		}
		dst := segOf(mine, k)
		for i, q := range recvs[k%2] {
			peer := (r + i + 1) % p
			st, err := q.Wait()
			if err := recvErr(st, err, len(dst)*elemSize[T](), peer); err != nil {
				recvs[k%2][i] = nil
				return fail(err)
			}
			recvs[k%2][i] = nil
			op.fn(slot(k, peer), dst)
		}
		recvs[k%2] = recvs[k%2][:0]
	}
	if err := comm.WaitAll(sends...); err != nil {
		return fail(err)
	}
	sends = sends[:0]

	// Allgather: our reduced block to everyone, theirs straight into place.
	in := recvs[0][:0]
	for i := 1; i < p; i++ {
		q := (r + i) % p
		if len(mine) > 0 {
			sends = append(sends, comm.Isend(cc, mine, q, tag))
		}
		if b := block(q); len(b) > 0 {
			in = append(in, comm.Irecv(cc, b, q, tag))
		}
	}
	var first error
	for i, k := 1, 0; i < p; i++ {
		q := (r + i) % p
		if b := block(q); len(b) > 0 {
			st, err := in[k].Wait()
			if err := recvErr(st, err, len(b)*elemSize[T](), q); err != nil && first == nil {
				first = err
			}
			k++
		}
	}
	if err := comm.WaitAll(sends...); first == nil {
		first = err
	}
	return first
}
