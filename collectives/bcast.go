package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Bcast copies root's buf into buf on every other rank (MPI_Bcast). len(buf) must be the same
// on every rank. Small messages travel inside the recursive-doubling exchange of the argument
// check (log2(p) rounds, the latency of a binomial tree, with the check included); medium ones
// go down a binomial tree; large ones are scattered down the tree in p pieces and reassembled
// with a ring allgather (van de Geijn), so the root sends each byte about once instead of
// log2(p) times.
func Bcast[T comm.Elem](c *comm.Comm, buf []T, root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Bcast", c, err)
	}
	return wrap("Bcast", c, bcast(cc, tag, buf, root, current()))
}

// Ibcast starts a Bcast; buf must not be touched until the request completes.
func Ibcast[T comm.Elem](c *comm.Comm, buf []T, root int) *comm.Request {
	cc, tag, err := begin(c)
	if err != nil {
		return failed("Ibcast", c, err)
	}
	return comm.Go(func() error { return wrap("Ibcast", c, bcast(cc, tag, buf, root, current())) })
}

func checkRoot(root, p int) error {
	if root < 0 || root >= p {
		return fmt.Errorf("root %d out of range [0,%d)", root, p)
	}
	return nil
}

func bcast[T comm.Elem](cc *comm.Comm, tag int, buf []T, root int, t *Tuning) error {
	p := cc.Size()
	lerr := checkRoot(root, p)
	s := sig{coll: "bcast", n: len(buf), typ: typeName[T](), root: root}
	alg := t.bcastAlg(len(buf)*elemSize[T](), p, layoutOf(cc).shape)
	if alg == AlgRecursiveDoubling && len(buf) > 0 && (t.Check || lerr == nil) {
		return rdCheck(cc, tag, buf, nil, true, root, s, lerr, 0)
	}
	if err := agreeOrLocal(t, cc, tag, s, lerr); err != nil {
		return err
	}
	if p == 1 {
		return nil
	}
	if alg == AlgHierarchical {
		return hierBcast(cc, tag, buf, root, t)
	}
	return bcastWith(cc, tag, buf, root, alg)
}

// bcastWith runs one flat algorithm, after the check.
func bcastWith[T comm.Elem](cc *comm.Comm, tag int, buf []T, root int, alg string) error {
	switch alg {
	case AlgScatterAllgather:
		return scatterAllgatherBcast(cc, tag, buf, root)
	case AlgRecursiveDoubling: // forced, with the check off: a plain exchange of the data
		s := sig{coll: "bcast", n: len(buf), typ: typeName[T](), root: root}
		return rdCheck(cc, tag, buf, nil, true, root, s, nil, 0)
	}
	return binomialBcast(cc, tag, buf, root)
}

// binomialBcast: relative rank v receives from v minus its lowest set bit, then sends to
// v + 2^k for every 2^k below that bit, largest subtree first.
func binomialBcast[T comm.Elem](cc *comm.Comm, tag int, buf []T, root int) error {
	p, r := cc.Size(), cc.Rank()
	v := (r - root + p) % p
	abs := func(x int) int { return (x + root) % p }
	mask := 1
	for mask < p {
		if v&mask != 0 {
			if err := recvExact(cc, buf, abs(v-mask), tag); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	var reqs []*comm.Request
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			reqs = append(reqs, comm.Isend(cc, buf, abs(v+mask), tag))
		}
	}
	return comm.WaitAll(reqs...)
}

// scatterAllgatherBcast splits buf into p pieces of ceil(n/p) elements by relative rank,
// scatters them down the binomial tree (each subtree receives its own range), then runs a ring
// allgather in place.
func scatterAllgatherBcast[T comm.Elem](cc *comm.Comm, tag int, buf []T, root int) error {
	p, r := cc.Size(), cc.Rank()
	n := len(buf)
	v := (r - root + p) % p
	abs := func(x int) int { return (x + root) % p }
	ss := (n + p - 1) / p
	rng := func(lo, hi int) []T { return buf[min(lo*ss, n):min(hi*ss, n)] }
	mask := 1
	for mask < p {
		if v&mask != 0 {
			if err := recvExact(cc, rng(v, v+mask), abs(v-mask), tag); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	var reqs []*comm.Request
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			reqs = append(reqs, comm.Isend(cc, rng(v+mask, v+2*mask), abs(v+mask), tag))
		}
	}
	if err := comm.WaitAll(reqs...); err != nil {
		return err
	}
	right, left := abs((v+1)%p), abs((v-1+p)%p)
	for s := 0; s < p-1; s++ {
		sb, rb := (v-s+p)%p, (v-s-1+p)%p
		if err := sendrecvExact(cc, rng(sb, sb+1), right, rng(rb, rb+1), left, tag); err != nil {
			return err
		}
	}
	return nil
}

// Barrier returns on each rank only after every rank has entered it (MPI_Barrier). For a
// power-of-two p it is recursive doubling, as Open MPI's tuned barrier: in round k each rank
// exchanges with rank XOR 2^k, so a round ends for a pair once both have reached it. Otherwise
// it is the dissemination algorithm: in round k each rank signals rank+2^k and waits for
// rank-2^k, so ceil(log2 p) rounds suffice for any p, but on a host with more ranks than cores
// a round needs every rank scheduled in turn around the cycle, where a pair needs only its two.
func Barrier(c *comm.Comm) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Barrier", c, err)
	}
	return wrap("Barrier", c, barrier(cc, tag))
}

// Ibarrier starts a Barrier.
func Ibarrier(c *comm.Comm) *comm.Request {
	cc, tag, err := begin(c)
	if err != nil {
		return failed("Ibarrier", c, err)
	}
	return comm.Go(func() error { return wrap("Ibarrier", c, barrier(cc, tag)) })
}

func barrier(cc *comm.Comm, tag int) error {
	p, r := cc.Size(), cc.Rank()
	if p&(p-1) == 0 {
		for k := 1; k < p; k <<= 1 {
			if err := sendrecvExact[byte](cc, nil, r^k, nil, r^k, tag); err != nil {
				return err
			}
		}
		return nil
	}
	for k := 1; k < p; k <<= 1 {
		if err := sendrecvExact[byte](cc, nil, (r+k)%p, nil, (r-k+p)%p, tag); err != nil {
			return err
		}
	}
	return nil
}
