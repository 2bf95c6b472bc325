package collectives

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gorun-hpc/gorun/comm"
)

// Message space. Every communicator a program passes to a collective gets, on its first
// collective call, a private duplicate (comm's Dup) that only this package sends on, as MPI
// libraries cache a duplicated communicator as an attribute of the user's. Collective traffic
// therefore never matches the program's point-to-point messages, whatever tags it uses.
// Collective calls are made in the same order on every rank, so every rank creates the
// duplicate at the same point of its communicator's history and the duplicates match.
//
// Tags: the private communicator carries nothing but collectives, and each operation on it
// takes the next number of a per-communicator sequence (the same on every rank, since calls
// are made in the same order) as its tag, so overlapping non-blocking collectives never match
// each other. That sequence is the package's only tag table; a hierarchical algorithm's
// per-host and leader communicators (split from the private one) reuse the operation's tag.
//
// A Patient view of a communicator (comm's Comm.Patient) is a handle of its own here: it gets
// its own private duplicate, itself patient, so a program must pass the same handle (the
// communicator or one view of it kept in a variable) on every rank, as with any communicator.

// space is the collective state of one user communicator.
type space struct {
	cc     *comm.Comm // private duplicate (patient when the user's handle is)
	seq    atomic.Uint64
	layout *hostLayout
	err    error // from creating the duplicate or the layout's splits
	user   weak.Pointer[comm.Comm]
	once   sync.Once // runs init
}

var (
	spaces sync.Map // weak.Pointer[comm.Comm] (the user's) -> *space
	// recent holds recently used spaces, direct-mapped by the user communicator's address
	// (byUser) and by the private one's (byPriv), so that a program that calls collectives on
	// a few communicators in turn (HPL: the grid, its rows and its columns) finds their state
	// without building a weak pointer and looking up the map on every call.
	recent struct{ byUser, byPriv [64]atomic.Pointer[space] }
)

func slot(c *comm.Comm) int { return int(uintptr(unsafe.Pointer(c))>>6) & 63 }

// spaceOf returns c's collective state, creating it (a collective step: every rank of c
// calls it at the same point) on the first call. Racing first calls on one handle create one
// duplicate; creation holds no lock shared between communicators, since ranks that are
// goroutines of one process create theirs at the same time and wait for each other.
func spaceOf(c *comm.Comm) *space {
	if sp := recent.byUser[slot(c)].Load(); sp != nil && sp.user.Value() == c {
		return sp
	}
	key := weak.Make(c)
	v, ok := spaces.Load(key)
	if !ok {
		fresh := &space{user: key}
		if v, ok = spaces.LoadOrStore(key, fresh); !ok {
			runtime.AddCleanup(c, dropSpace, key)
		}
	}
	sp := v.(*space)
	sp.once.Do(func() { sp.init(c) })
	recent.byUser[slot(c)].Store(sp)
	if sp.cc != nil {
		recent.byPriv[slot(sp.cc)].Store(sp)
	}
	return sp
}

func (sp *space) init(c *comm.Comm) {
	d, err := c.Dup()
	if err != nil {
		sp.err = fmt.Errorf("creating the collectives' communicator: %w", err)
		return
	}
	if c.Patient() == c { // Patient returns its receiver only when it already is a patient view
		d = d.Patient()
	}
	sp.cc = d
	sp.layout = newLayout(d)
	layouts.Store(d, sp.layout)
	sp.err = sp.layout.err
}

// dropSpace forgets a collected communicator's state (its duplicate is then unreachable).
func dropSpace(key weak.Pointer[comm.Comm]) {
	if v, ok := spaces.LoadAndDelete(key); ok {
		sp := v.(*space)
		if sp.cc != nil {
			layouts.Delete(sp.cc)
		}
		for i := range recent.byUser { // the user's address is gone: look everywhere
			recent.byUser[i].CompareAndSwap(sp, nil)
			recent.byPriv[i].CompareAndSwap(sp, nil)
		}
	}
}

// begin is how every collective starts: c's private communicator (created, with its host
// layout, on the first call, in the caller's goroutine even for the non-blocking forms, which
// keeps the ranks' sequences of communicator operations identical) and the operation's tag.
func begin(c *comm.Comm) (*comm.Comm, int, error) {
	sp := spaceOf(c)
	if sp.err != nil {
		return nil, 0, sp.err
	}
	return sp.cc, int(sp.seq.Add(1) % comm.MaxTag), nil
}

// failed is the request of a non-blocking collective that could not start.
func failed(name string, c *comm.Comm, err error) *comm.Request {
	return comm.Go(func() error { return wrap(name, c, err) })
}
