package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Scan leaves in recv on rank r the reduction of send over ranks 0..r, in rank order
// (MPI_Scan, an inclusive prefix reduction). Lengths must match everywhere; send == nil is the
// in-place form. Recursive doubling: ceil(log2 p) exchanges.
func Scan[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T]) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Scan", c, err)
	}
	return wrap("Scan", c, scan(cc, tag, send, recv, op, false))
}

// Exscan is the exclusive prefix reduction (MPI_Exscan): rank r > 0 gets the reduction over
// ranks 0..r-1; rank 0's recv is left unchanged.
func Exscan[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T]) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Exscan", c, err)
	}
	return wrap("Exscan", c, scan(cc, tag, send, recv, op, true))
}

func scan[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, op Op[T], exclusive bool) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	n := len(recv)
	lerr := op.Err()
	switch {
	case lerr != nil:
	case send != nil && len(send) != n:
		lerr = fmt.Errorf("len(send) = %d but len(recv) = %d", len(send), n)
	case n%op.unit != 0:
		lerr = fmt.Errorf("op %s needs (value, index) pairs: length %d is odd", op.Name(), n)
	}
	name := "scan"
	if exclusive {
		name = "exscan"
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: name, n: n, typ: typeName[T](), op: op.id}, lerr); err != nil {
		return err
	}
	// partial: the reduction over the aligned group of ranks seen so far (ours included).
	partial, ps := scratchOf[T](n)
	defer ps.release()
	if send == nil {
		copy(partial, recv)
	} else {
		copy(partial, send)
		if !exclusive {
			copy(recv, send)
		}
	}
	tmp, ts := scratchOf[T](n)
	defer ts.release()
	have := !exclusive // whether recv holds a value yet
	for mask := 1; mask < p; mask <<= 1 {
		peer := r ^ mask
		if peer >= p {
			continue
		}
		if err := sendrecvExact(cc, partial, peer, tmp, peer, tag); err != nil {
			return err
		}
		if peer < r {
			// tmp covers lower ranks: it goes on the left of both.
			op.fn(tmp, partial)
			if have {
				op.fn(tmp, recv)
			} else {
				copy(recv, tmp)
				have = true
			}
		} else if op.commute {
			op.fn(tmp, partial)
		} else {
			op.fn(partial, tmp)
			copy(partial, tmp)
		}
	}
	return nil
}
