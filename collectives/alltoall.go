package collectives

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Alltoall sends block j of send (send[j*n:(j+1)*n]) to rank j, which stores it as block i of
// its recv, i being the sender (MPI_Alltoall). len(send) = len(recv) = p*n with n the same on
// every rank. send == nil is the in-place form (recv holds the blocks to send). Pairwise
// exchange: at step s rank r sends to r+s and receives from r-s.
func Alltoall[T comm.Elem](c *comm.Comm, send, recv []T) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Alltoall", c, err)
	}
	return wrap("Alltoall", c, alltoall(cc, tag, send, recv))
}

func alltoall[T comm.Elem](cc *comm.Comm, tag int, send, recv []T) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	var lerr error
	if len(recv)%p != 0 {
		lerr = fmt.Errorf("len(recv) = %d is not a multiple of %d ranks", len(recv), p)
	} else if send != nil && len(send) != len(recv) {
		lerr = fmt.Errorf("len(send) = %d but len(recv) = %d", len(send), len(recv))
	}
	n := len(recv) / p
	if err := agreeOrLocal(t, cc, tag, sig{coll: "alltoall", n: n, typ: typeName[T]()}, lerr); err != nil {
		return err
	}
	if send == nil || sameSlice(send, recv) {
		s, ss := scratchOf[T](len(recv))
		defer ss.release()
		copy(s, recv)
		send = s
	}
	copy(recv[r*n:(r+1)*n], send[r*n:(r+1)*n])
	for s := 1; s < p; s++ {
		dst, src := (r+s)%p, (r-s+p)%p
		if err := sendrecvExact(cc, send[dst*n:(dst+1)*n], dst, recv[src*n:(src+1)*n], src, tag); err != nil {
			return err
		}
	}
	return nil
}

// Alltoallv is Alltoall with counts and displacements per peer: rank r sends
// send[sdispls[j]:][:sendcounts[j]] to rank j, which receives it into
// recv[rdispls[r]:][:recvcounts[r]] (MPI_Alltoallv). sendcounts[j] on rank r must equal
// recvcounts[r] on rank j; if not, every rank returns an error. nil displacements mean packed.
func Alltoallv[T comm.Elem](c *comm.Comm, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Alltoallv", c, err)
	}
	return wrap("Alltoallv", c, alltoallv(cc, tag, send, sendcounts, sdispls, recv, recvcounts, rdispls))
}

func alltoallv[T comm.Elem](cc *comm.Comm, tag int, send []T, sendcounts, sdispls []int, recv []T, recvcounts, rdispls []int) error {
	p, r := cc.Size(), cc.Rank()
	t := current()
	sd, lerr := checkCounts("sendcounts", sendcounts, sdispls, p, len(send))
	var rd []int
	if lerr == nil {
		rd, lerr = checkCounts("recvcounts", recvcounts, rdispls, p, len(recv))
	}
	if lerr == nil && sendcounts[r] != recvcounts[r] {
		lerr = fmt.Errorf("sendcounts[%d] = %d but recvcounts[%d] = %d", r, sendcounts[r], r, recvcounts[r])
	}
	s := sig{coll: "alltoallv", typ: typeName[T]()}
	if err := agreeOrLocal(t, cc, tag, s, lerr); err != nil {
		return err
	}
	copy(recv[rd[r]:rd[r]+recvcounts[r]], send[sd[r]:sd[r]+sendcounts[r]])
	var derr error
	for k := 1; k < p; k++ {
		dst, src := (r+k)%p, (r-k+p)%p
		err := sendrecvExact(cc, send[sd[dst]:sd[dst]+sendcounts[dst]], dst, recv[rd[src]:rd[src]+recvcounts[src]], src, tag)
		if err != nil && derr == nil {
			derr = err // keep exchanging so that no peer waits for us
		}
	}
	return postCheck(t, cc, tag, s, derr)
}
