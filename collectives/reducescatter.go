package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// ReduceScatter reduces the vectors send (length sum(counts), the same on every rank) with op
// and leaves block i, of counts[i] elements, on rank i in recv (MPI_Reduce_scatter). counts
// must be the same on every rank and len(recv) = counts[rank]. send == nil is the in-place form:
// recv holds the whole input vector and the result is left in recv[:counts[rank]].
//
// Commutative ops use a ring (p-1 steps, each rank adding its contribution to a block as it
// passes) or pairwise exchange (each rank sends every other rank its contribution to that
// rank's block); non-commutative ops reduce in rank order to rank 0 and scatter.
func ReduceScatter[T comm.Elem](c *comm.Comm, send, recv []T, counts []int, op Op[T]) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("ReduceScatter", c, err)
	}
	return wrap("ReduceScatter", c, reduceScatter(cc, tag, send, recv, counts, op))
}

// ReduceScatterBlock is ReduceScatter with every block n = len(recv) elements: len(send) = p*n
// (MPI_Reduce_scatter_block). In place (send == nil): len(recv) = p*n, the result lands in
// recv[:n].
func ReduceScatterBlock[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T]) error {
	p := c.Size()
	n := len(recv)
	if send == nil {
		n = len(recv) / p // a remainder is caught as a length mismatch below
	}
	counts := make([]int, p)
	for i := range counts {
		counts[i] = n
	}
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("ReduceScatterBlock", c, err)
	}
	return wrap("ReduceScatterBlock", c, reduceScatter(cc, tag, send, recv, counts, op))
}

func reduceScatter[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, counts []int, op Op[T]) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	lerr := op.Err()
	var total int
	if lerr == nil && len(counts) != p {
		lerr = fmt.Errorf("len(counts) = %d, want %d ranks", len(counts), p)
	}
	if lerr == nil {
		for i, c := range counts {
			if c < 0 || c%op.unit != 0 {
				lerr = fmt.Errorf("counts[%d] = %d is negative or splits a (value, index) pair", i, c)
				break
			}
			total += c
		}
	}
	if lerr == nil {
		switch {
		case send == nil && len(recv) != total:
			lerr = fmt.Errorf("in place: len(recv) = %d, want sum(counts) = %d", len(recv), total)
		case send != nil && len(send) != total:
			lerr = fmt.Errorf("len(send) = %d, want sum(counts) = %d", len(send), total)
		case send != nil && len(recv) != counts[r]:
			lerr = fmt.Errorf("len(recv) = %d, want counts[%d] = %d", len(recv), r, counts[r])
		}
	}
	var h uint64
	if len(counts) == p {
		h = hashInts(counts)
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "reduce_scatter", n: total, typ: typeName[T](), op: op.id, extra: h}, lerr); err != nil {
		return err
	}
	src := send
	if send == nil {
		// In place: the output overlaps inputs still to be sent, so work from a copy.
		s, ss := scratchOf[T](total)
		defer ss.release()
		copy(s, recv)
		src = s
	}
	out := recv[:counts[r]]
	off := make([]int, p+1)
	for i, c := range counts {
		off[i+1] = off[i] + c
	}
	if p == 1 {
		copy(out, src)
		return nil
	}
	if !op.commute {
		return reduceScatterOrdered(cc, tag, src, out, off, op)
	}
	if t.reduceScatterAlg() == AlgPairwise {
		return reduceScatterPairwise(cc, tag, src, out, off, op)
	}
	return reduceScatterRing(cc, tag, src, out, off, op)
}

// reduceScatterRing: at step s rank r sends the partial sum of block r-s-1 to r+1 and receives
// the partial of block r-s-2 from r-1, adding its own contribution; the last block to arrive,
// at step p-2, is its own. Two scratch blocks alternate so sending one overlaps receiving the
// other.
func reduceScatterRing[T comm.Elem](cc *comm.Comm, tag int, src, out []T, off []int, op Op[T]) error {
	p, r := cc.Size(), cc.Rank()
	next, prev := (r+1)%p, (r-1+p)%p
	maxBlock := 0
	for i := 0; i < p; i++ {
		maxBlock = max(maxBlock, off[i+1]-off[i])
	}
	a, as := scratchOf[T](maxBlock)
	defer as.release()
	b, bs := scratchOf[T](maxBlock)
	defer bs.release()
	blk := func(i int) (int, int) { return off[i], off[i+1] }
	lo, hi := blk((r - 1 + p) % p)
	sreq := comm.Isend(cc, src[lo:hi], next, tag)
	for s := 0; s < p-1; s++ {
		lo, hi := blk((r - s - 2 + 2*p) % p)
		in := a[:hi-lo]
		st, err := comm.Recv(cc, in, prev, tag)
		if err := recvErr(st, err, (hi-lo)*elemSize[T](), prev); err != nil {
			sreq.Wait()
			return err
		}
		op.fn(src[lo:hi], in)
		if _, err := sreq.Wait(); err != nil {
			return err
		}
		if s == p-2 {
			copy(out, in)
			return nil
		}
		sreq = comm.Isend(cc, in, next, tag)
		a, b = b, a
	}
	return nil
}

// reduceScatterPairwise: at step s rank r sends its contribution to block r+s to rank r+s and
// adds the contribution of rank r-s to its own block.
func reduceScatterPairwise[T comm.Elem](cc *comm.Comm, tag int, src, out []T, off []int, op Op[T]) error {
	p, r := cc.Size(), cc.Rank()
	copy(out, src[off[r]:off[r+1]])
	tmp, ts := scratchOf[T](len(out))
	defer ts.release()
	for s := 1; s < p; s++ {
		dst, from := (r+s)%p, (r-s+p)%p
		if err := sendrecvExact(cc, src[off[dst]:off[dst+1]], dst, tmp, from, tag); err != nil {
			return err
		}
		op.fn(tmp, out)
	}
	return nil
}

// reduceScatterOrdered keeps rank order for non-commutative ops: a binomial reduce to rank 0,
// then rank 0 sends each block to its owner.
func reduceScatterOrdered[T comm.Elem](cc *comm.Comm, tag int, src, out []T, off []int, op Op[T]) error {
	p, r := cc.Size(), cc.Rank()
	acc, as := scratchOf[T](len(src))
	defer as.release()
	copy(acc, src)
	if err := binomialReduce(cc, tag, acc, op, 0); err != nil {
		return err
	}
	if r != 0 {
		return recvExact(cc, out, 0, tag)
	}
	copy(out, acc[off[0]:off[1]])
	reqs := make([]*comm.Request, 0, p)
	for i := 1; i < p; i++ {
		reqs = append(reqs, comm.Isend(cc, acc[off[i]:off[i+1]], i, tag))
	}
	return comm.WaitAll(reqs...)
}
