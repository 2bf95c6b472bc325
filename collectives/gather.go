package collectives

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Gather collects every rank's send on root, rank i's block at recv[i*n:(i+1)*n] (MPI_Gather).
// len(send) = n must be the same everywhere; root's len(recv) = p*n (recv is ignored
// elsewhere). On root send == nil is the in-place form. Root receives from all ranks at once.
func Gather[T comm.Elem](c *comm.Comm, send, recv []T, root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Gather", c, err)
	}
	return wrap("Gather", c, gather(cc, tag, send, recv, root))
}

func gather[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, root int) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	n := len(send)
	lerr := checkRoot(root, p)
	if lerr == nil && r == root {
		if send == nil {
			n = len(recv) / p
			if len(recv)%p != 0 {
				lerr = fmt.Errorf("in place: len(recv) = %d is not a multiple of %d ranks", len(recv), p)
			}
		} else if len(recv) != p*n {
			lerr = fmt.Errorf("root's len(recv) = %d, want %d ranks x %d", len(recv), p, n)
		}
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "gather", n: n, typ: typeName[T](), root: root}, lerr); err != nil {
		return err
	}
	if r != root {
		return sendTo(cc, send, root, tag)
	}
	counts := make([]int, p)
	displs := make([]int, p)
	for i := range counts {
		counts[i], displs[i] = n, i*n
	}
	if send != nil {
		copy(recv[r*n:], send)
	}
	return gatherRecv(cc, tag, recv, counts, displs)
}

// gatherRecv receives every other rank's block at root and checks its size; it always waits for
// all of them, so no message is left unmatched when one is wrong.
func gatherRecv[T comm.Elem](cc *comm.Comm, tag int, recv []T, counts, displs []int) error {
	p, r := cc.Size(), cc.Rank()
	reqs := make([]*comm.Request, p)
	for i := 0; i < p; i++ {
		if i != r {
			reqs[i] = comm.Irecv(cc, recv[displs[i]:displs[i]+counts[i]], i, tag)
		}
	}
	var first error
	for i, q := range reqs {
		if q == nil {
			continue
		}
		st, err := q.Wait()
		if err := recvErr(st, err, counts[i]*elemSize[T](), i); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Gatherv is Gather with a count per rank: on root, rank i's len(send) = counts[i] elements land
// at recv[displs[i]:] (displs nil: packed in rank order); counts, displs and recv are ignored
// elsewhere. A rank whose len(send) differs from root's counts entry makes every rank return an
// error.
func Gatherv[T comm.Elem](c *comm.Comm, send, recv []T, counts, displs []int, root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Gatherv", c, err)
	}
	return wrap("Gatherv", c, gatherv(cc, tag, send, recv, counts, displs, root))
}

func gatherv[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, counts, displs []int, root int) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	lerr := checkRoot(root, p)
	var d []int
	if lerr == nil && r == root {
		d, lerr = checkCounts("counts", counts, displs, p, len(recv))
		if lerr == nil && send != nil && len(send) != counts[r] {
			lerr = fmt.Errorf("root's len(send) = %d but counts[%d] = %d", len(send), r, counts[r])
		}
	}
	s := sig{coll: "gatherv", typ: typeName[T](), root: root}
	if err := agreeOrLocal(t, cc, tag, s, lerr); err != nil {
		return err
	}
	var derr error
	if r != root {
		derr = sendTo(cc, send, root, tag)
	} else {
		if send != nil {
			copy(recv[d[r]:], send)
		}
		derr = gatherRecv(cc, tag, recv, counts, d)
	}
	return postCheck(t, cc, tag, s, derr)
}

// postCheck makes an error seen by one rank during the data phase of a v-collective (a count
// that did not match) an error on every rank: a second argument check, after the data.
func postCheck(t *Tuning, cc *comm.Comm, tag int, s sig, derr error) error {
	var pe *comm.PeerError
	if !t.Check || errors.As(derr, &pe) {
		return derr
	}
	s.coll += "/data"
	return agree(cc, tag, s, derr)
}

// Scatter sends block i of root's send (send[i*n:(i+1)*n]) to rank i's recv (MPI_Scatter).
// len(recv) = n must be the same everywhere; root's len(send) = p*n (send is ignored
// elsewhere). On root recv == nil is the in-place form (root's block stays in send).
func Scatter[T comm.Elem](c *comm.Comm, send, recv []T, root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Scatter", c, err)
	}
	return wrap("Scatter", c, scatter(cc, tag, send, recv, root))
}

func scatter[T comm.Elem](cc *comm.Comm, tag int, send, recv []T, root int) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	n := len(recv)
	lerr := checkRoot(root, p)
	if lerr == nil && r == root {
		if recv == nil {
			n = len(send) / p
			if len(send)%p != 0 {
				lerr = fmt.Errorf("in place: len(send) = %d is not a multiple of %d ranks", len(send), p)
			}
		} else if len(send) != p*n {
			lerr = fmt.Errorf("root's len(send) = %d, want %d ranks x %d", len(send), p, n)
		}
	}
	if err := agreeOrLocal(t, cc, tag, sig{coll: "scatter", n: n, typ: typeName[T](), root: root}, lerr); err != nil {
		return err
	}
	if r != root {
		return recvExact(cc, recv, root, tag)
	}
	counts := make([]int, p)
	displs := make([]int, p)
	for i := range counts {
		counts[i], displs[i] = n, i*n
	}
	if recv != nil {
		copy(recv, send[r*n:(r+1)*n])
	}
	return scatterSend(cc, tag, send, counts, displs)
}

func scatterSend[T comm.Elem](cc *comm.Comm, tag int, send []T, counts, displs []int) error {
	p, r := cc.Size(), cc.Rank()
	reqs := make([]*comm.Request, 0, p)
	for i := 0; i < p; i++ {
		if i != r {
			reqs = append(reqs, comm.Isend(cc, send[displs[i]:displs[i]+counts[i]], i, tag))
		}
	}
	return comm.WaitAll(reqs...)
}

// Scatterv is Scatter with a count per rank: root sends send[displs[i]:displs[i]+counts[i]] to
// rank i, whose len(recv) must equal counts[i]. counts, displs and send are read on root only;
// on root recv == nil is the in-place form.
func Scatterv[T comm.Elem](c *comm.Comm, send []T, counts, displs []int, recv []T, root int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Scatterv", c, err)
	}
	return wrap("Scatterv", c, scatterv(cc, tag, send, counts, displs, recv, root))
}

func scatterv[T comm.Elem](cc *comm.Comm, tag int, sendBuf []T, counts, displs []int, recv []T, root int) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	lerr := checkRoot(root, p)
	var d []int
	if lerr == nil && r == root {
		d, lerr = checkCounts("counts", counts, displs, p, len(sendBuf))
		if lerr == nil && recv != nil && len(recv) != counts[r] {
			lerr = fmt.Errorf("root's len(recv) = %d but counts[%d] = %d", len(recv), r, counts[r])
		}
	}
	s := sig{coll: "scatterv", typ: typeName[T](), root: root}
	if err := agreeOrLocal(t, cc, tag, s, lerr); err != nil {
		return err
	}
	var derr error
	if r != root {
		derr = recvExact(cc, recv, root, tag)
	} else {
		if recv != nil {
			copy(recv, sendBuf[d[r]:d[r]+counts[r]])
		}
		derr = scatterSend(cc, tag, sendBuf, counts, d)
	}
	return postCheck(t, cc, tag, s, derr)
}
