package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Allgather gathers every rank's send into recv on every rank, rank i's block at
// recv[i*n:(i+1)*n] (MPI_Allgather). len(send) = n must be the same everywhere and
// len(recv) = p*n. send == nil is the in-place form: this rank's block is already in recv.
// Recursive doubling (power-of-two rank counts, small results) or a ring.
func Allgather[T comm.Elem](c *comm.Comm, send, recv []T) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Allgather", c, err)
	}
	return wrap("Allgather", c, allgather(cc, tag, send, recv))
}

// Iallgather starts an Allgather.
func Iallgather[T comm.Elem](c *comm.Comm, send, recv []T) *comm.Request {
	cc, tag, err := begin(c)
	if err != nil {
		return failed("Iallgather", c, err)
	}
	return comm.Go(func() error { return wrap("Iallgather", c, allgather(cc, tag, send, recv)) })
}

func allgather[T comm.Elem](cc *comm.Comm, tag int, send, recv []T) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	n := len(send)
	var lerr error
	if send == nil {
		n = len(recv) / p
		if len(recv)%p != 0 {
			lerr = fmt.Errorf("in place: len(recv) = %d is not a multiple of %d ranks", len(recv), p)
		}
	} else if len(recv) != p*n {
		lerr = fmt.Errorf("len(recv) = %d, want %d ranks x %d", len(recv), p, n)
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "allgather", n: n, typ: typeName[T]()}, lerr); err != nil {
		return err
	}
	if send != nil && !sameSlice(send, recv[r*n:(r+1)*n]) {
		copy(recv[r*n:], send)
	}
	if p == 1 {
		return nil
	}
	off := offsets(p)
	for i := range off {
		off[i] = i * n
	}
	if t.allgatherAlg(len(recv)*elemSize[T](), p) == AlgRecursiveDoubling {
		// After the step with distance d each rank holds the blocks of its aligned group of 2d.
		for d := 1; d < p; d <<= 1 {
			peer := r ^ d
			my, their := r&^(d-1), peer&^(d-1)
			if err := sendrecvExact(cc, recv[off[my]:off[my+d]], peer, recv[off[their]:off[their+d]], peer, tag); err != nil {
				return err
			}
		}
		return nil
	}
	return ringAllgather(cc, tag, recv, off)
}

// ringAllgather: at step s rank r passes block r-s to r+1 and receives block r-s-1 from r-1,
// in place.
func ringAllgather[T comm.Elem](cc *comm.Comm, tag int, recv []T, off []int) error {
	p, r := cc.Size(), cc.Rank()
	next, prev := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		sb, rb := (r-s+p)%p, (r-s-1+p)%p
		if err := sendrecvExact(cc, recv[off[sb]:off[sb+1]], next, recv[off[rb]:off[rb+1]], prev, tag); err != nil {
			return err
		}
	}
	return nil
}

// Allgatherv is Allgather with a count per rank: rank i's len(send) = counts[i] elements land
// at recv[displs[i]:]. counts must be the same on every rank; displs nil means packed in rank
// order. send == nil is the in-place form. Ring algorithm.
func Allgatherv[T comm.Elem](c *comm.Comm, send, recv []T, counts, displs []int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Allgatherv", c, err)
	}
	return wrap("Allgatherv", c, allgatherv(cc, tag, send, recv, counts, displs, current()))
}

// checkCounts validates counts/displs against a buffer of length n and returns the
// displacements (packed when displs is nil).
func checkCounts(what string, counts, displs []int, p, n int) ([]int, error) {
	if len(counts) != p {
		return nil, fmt.Errorf("len(%s) = %d, want %d ranks", what, len(counts), p)
	}
	if displs == nil {
		displs = make([]int, p)
		sum := 0
		for i, c := range counts {
			displs[i] = sum
			sum += c
		}
	} else if len(displs) != p {
		return nil, fmt.Errorf("len(displs) = %d, want %d ranks", len(displs), p)
	}
	for i, c := range counts {
		if c < 0 || displs[i] < 0 || displs[i]+c > n {
			return nil, fmt.Errorf("%s[%d] = %d at displacement %d does not fit a buffer of %d", what, i, c, displs[i], n)
		}
	}
	return displs, nil
}

func allgatherv[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, counts, displs []int, t *Tuning) error {
	p, r := cc.Size(), cc.Rank()
	d, lerr := checkCounts("counts", counts, displs, p, len(recv))
	if lerr == nil && send != nil && len(send) != counts[r] {
		lerr = fmt.Errorf("len(send) = %d but counts[%d] = %d", len(send), r, counts[r])
	}
	var h uint64
	if len(counts) == p {
		h = hashInts(counts)
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "allgatherv", typ: typeName[T](), extra: h}, lerr); err != nil {
		return err
	}
	if send != nil {
		copy(recv[d[r]:d[r]+counts[r]], send)
	}
	next, prev := (r+1)%p, (r-1+p)%p
	blk := func(b int) []T { return recv[d[b] : d[b]+counts[b]] }
	for s := 0; s < p-1; s++ {
		sb, rb := (r-s+p)%p, (r-s-1+p)%p
		if err := sendrecvExact(cc, blk(sb), next, blk(rb), prev, tag); err != nil {
			return err
		}
	}
	return nil
}
