package collectives

import (
	"sync/atomic"

	"github.com/gorun-hpc/gorun/comm"
)

// Options adjust one call of AllreduceWith, BcastWith, ReduceWith or AllgathervWith; the zero
// value behaves as the plain call (Allreduce, ...).
type Options struct {
	// NoCheck skips the argument check for this call, as GORUN_COLL_CHECK=0 does for every
	// call: no header exchange before the data (a round trip saved above the small-message
	// size, header work saved below it), but arguments that differ between ranks are then
	// undefined behaviour (a hang, an error or a wrong answer) instead of an error on every
	// rank. It is for callers whose arguments agree on every rank by construction, such as a
	// tensor-parallel layer or HPL's pivot search. A rank's own bad arguments (lengths that do
	// not fit) are still reported on that rank.
	NoCheck bool
}

// AllreduceWith is Allreduce with options.
func AllreduceWith[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T], o Options) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Allreduce", c, err)
	}
	return wrap("Allreduce", c, allreduce(cc, tag, send, recv, op, o.tuning()))
}

// BcastWith is Bcast with options.
func BcastWith[T comm.Elem](c *comm.Comm, buf []T, root int, o Options) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Bcast", c, err)
	}
	return wrap("Bcast", c, bcast(cc, tag, buf, root, o.tuning()))
}

// ReduceWith is Reduce with options.
func ReduceWith[T comm.Elem](c *comm.Comm, send, recv []T, op Op[T], root int, o Options) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Reduce", c, err)
	}
	return wrap("Reduce", c, reduce(cc, tag, send, recv, op, root, o.tuning()))
}

// AllgathervWith is Allgatherv with options.
func AllgathervWith[T comm.Elem](c *comm.Comm, send, recv []T, counts, displs []int, o Options) error {
	cc, tag, err := begin(c)
	if err != nil {
		return wrap("Allgatherv", c, err)
	}
	return wrap("Allgatherv", c, allgatherv(cc, tag, send, recv, counts, displs, o.tuning()))
}

// unchecked caches the table in force with Check off: {the table, its copy}.
var unchecked atomic.Pointer[[2]*Tuning]

// tuning is the table for a call with options o.
func (o Options) tuning() *Tuning {
	t := current()
	if !o.NoCheck || !t.Check {
		return t
	}
	if u := unchecked.Load(); u != nil && u[0] == t {
		return u[1]
	}
	nc := *t
	nc.Check = false
	unchecked.Store(&[2]*Tuning{t, &nc})
	return &nc
}
