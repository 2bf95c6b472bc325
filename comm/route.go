package comm

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/shmtp"
	"github.com/gorun-hpc/gorun/comm/internal/verbstp"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// The layers of a rank, bottom up:
//
//   - the rendezvous (comm/internal/boot, bootstrap.go): every rank registers with rank 0 or the
//     launcher and gets the table of all ranks: address, host, process;
//   - the TCP mesh (comm/internal/tcp, tcp.Connect): one authenticated link per pair of ranks,
//     always built; it is the liveness channel of every peer (heartbeats, a link that ends) and
//     the data plane of the peers no other transport reaches;
//   - the data transports of dataTransports below (shared memory, comm/internal/shmtp; RDMA
//     verbs, comm/internal/verbstp), each set up over the mesh for the peers it reaches;
//   - the route table (world.routes): which transport carries the messages to each peer, fixed
//     once at bootstrap, and the progress mode (which transports a waiter polls);
//   - liveness (liveness.go; core.Liveness to the transports): a lost peer is reported once,
//     to every transport and the engine;
//   - the engine (comm/internal/core): matching of messages and receives, common to all transports;
//   - Comm (comm.go, p2p.go): ranks, tags, communicators.
//
// Goroutine ranks of Run (run.go) use the in-process transport (comm/internal/inproc) alone instead.

// A transportKind is a data transport the bootstrap can set up beside the TCP mesh. Adding a
// transport is its package (comm/internal/NAME, set up from core.Setup), its name in jobenv,
// and one line in dataTransports.
type transportKind struct {
	name string // its GORUN_TRANSPORT value
	// auto: set up, for the peers it reaches, when GORUN_TRANSPORT is auto or unset.
	auto bool
	// check, if set, says before any set-up why the transport cannot carry every peer, as
	// GORUN_TRANSPORT=name asks (nil: it can).
	check func(me int, table []rankInfo) error
	// setup connects this rank to the peers the transport reaches, exchanging what it needs
	// over the mesh (every rank calls it, in the same order). It returns the transport and
	// whether it reaches each world rank, or nil without error where it reaches none.
	setup func(s *core.Setup) (tr core.Transport, reach func(rank int) bool, err error)
}

// dataTransports lists the data transports, in the order auto tries them.
var dataTransports = []transportKind{
	{name: jobenv.TransportShm, auto: true, check: shmtp.Check, setup: shmtp.Setup},
	{name: jobenv.TransportVerbs, setup: verbstp.Setup},
}

// meshBootstrap is the set-up of the data transports: core.Setup, which each transport is
// given (the rank, its engine and liveness, its identity, the rendezvous table, set-up
// exchanges over the mesh), the world so far (every route on the TCP mesh) and the mesh.
type meshBootstrap struct {
	core.Setup
	w   *world
	tcp meshTransport
}

// meshTransport is what comm uses of the TCP mesh (comm/internal/tcp's Transport) besides
// core.Transport.
type meshTransport interface {
	core.Transport
	core.Progressor // the progress mode where the mesh carries every peer
	// Answers reports whether the peer was heard from within the peer timeout.
	Answers(rank int) bool
	// CarryData names the peers whose messages the mesh carries: the links waiters poll.
	CarryData(ranks []int)
	// Beside is the progress mode where a data transport carries some peers and the mesh the
	// others: a waiter polls both.
	Beside(data core.ProgressSource) core.Progressor
	// Close fails every link and closes the mesh (a set-up that failed).
	Close(cause error)
}

// Every transport parses frames with wire.Parse, whose tag bound is comm's: this fails to
// compile if they differ.
var _ = [1]struct{}{}[MaxTag-wire.MaxTag]

// route is how messages reach one peer.
type route struct {
	tr transport
	// direct, when set, sends and receives small blocking messages with no Request (core.DirectLink; shared memory has them).
	direct core.DirectLink
}

// useTransports sets up the data transports GORUN_TRANSPORT asks for and builds the route
// table and progress mode: every peer's messages go through the first transport that reaches
// it, else the mesh.
func useTransports(b *meshBootstrap) error {
	w, name := b.w, b.ID.Transport
	var kinds []transportKind
	switch name {
	case jobenv.TransportTCP:
	case "", jobenv.TransportAuto:
		for _, k := range dataTransports {
			if k.auto {
				kinds = append(kinds, k)
			}
		}
	default:
		for _, k := range dataTransports {
			if k.name == name {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) == 0 {
			return fmt.Errorf("comm: %s=%q: want %s", jobenv.Transport, name, jobenv.TransportList())
		}
		if k := kinds[0]; k.check != nil {
			if err := k.check(w.rank, b.Table); err != nil {
				return err
			}
		}
	}
	// While the data transports set up, their exchanges go over the mesh.
	meshOnly := make([]route, w.size)
	for r := range meshOnly {
		if r != w.rank {
			meshOnly[r].tr = b.tcp
		}
	}
	w.setTransports([]transport{b.tcp})
	w.routes = meshOnly
	routes := append([]route(nil), meshOnly...)
	trs := []transport{b.tcp}
	var used []transport // data transports that carry some peer, other than the mesh
	for _, k := range kinds {
		tr, reach, err := k.setup(&b.Setup)
		if err != nil {
			for i := len(trs) - 1; i >= 1; i-- {
				trs[i].Abandon(err)
			}
			return err
		}
		if tr == nil {
			continue
		}
		trs = append(trs, tr)
		carries := false
		for r := range routes {
			if r != w.rank && routes[r].tr == b.tcp && reach(r) {
				routes[r].tr = tr
				carries = true
			}
		}
		if carries {
			used = append(used, tr)
		}
	}
	// Waiters poll the links that carry data.
	var meshData []int
	for r, rt := range routes {
		if rt.tr == b.tcp {
			meshData = append(meshData, r)
		}
	}
	b.tcp.CarryData(meshData)
	prog, err := progressFor(used, b.tcp, len(meshData) > 0)
	if err != nil {
		for i := len(trs) - 1; i >= 1; i-- {
			trs[i].Abandon(err)
		}
		return err
	}
	w.prog = prog
	if len(used) == 1 && len(meshData) == 0 {
		// One transport carries everything: its links may take blocking messages directly.
		if d, ok := used[0].(core.Director); ok {
			for r := range routes {
				if r != w.rank {
					routes[r].direct = d.DirectTo(r)
				}
			}
		}
	}
	w.setTransports(trs)
	w.routes = routes
	return nil
}

// progressFor is the progress mode of a rank whose data goes through the transports used
// and, where meshData, the TCP mesh: a waiter polls what carries data.
func progressFor(used []transport, mesh meshTransport, meshData bool) (core.Progressor, error) {
	switch {
	case len(used) == 0:
		return mesh, nil
	case len(used) > 1:
		return nil, errors.New("comm: more than one data transport besides TCP carries messages: no progress mode for that")
	}
	if !meshData {
		if p, ok := used[0].(core.Progressor); ok {
			return p, nil
		}
		return nil, nil // completions come from the transport's own goroutines
	}
	if ps, ok := used[0].(core.ProgressSource); ok {
		return mesh.Beside(ps), nil
	}
	return nil, fmt.Errorf("comm: %T carries some peers and TCP the others, but it cannot be polled beside TCP", used[0])
}

// finalizeTransports closes the world's transports after the final barrier: the data
// transports first, the TCP mesh, their liveness channel, last.
func (w *world) finalizeTransports() error {
	var first error
	trs := w.transports()
	for i := len(trs) - 1; i >= 0; i-- {
		if err := trs[i].Finalize(); first == nil {
			first = err
		}
	}
	return first
}

// abandonTransports closes the world's transports at once, as the process's exit would.
func (w *world) abandonTransports(cause error) {
	trs := w.transports()
	for i := len(trs) - 1; i >= 0; i-- {
		trs[i].Abandon(cause)
	}
}

// newMeshBootstrap is the set-up of the data transports of world w over mesh t, with the
// world's liveness live.
func newMeshBootstrap(w *world, t meshTransport, live core.Liveness, id identity, table []rankInfo, jobHash uint64) *meshBootstrap {
	return &meshBootstrap{
		Setup: core.Setup{Rank: w.rank, Size: w.size, Eng: w.eng, Live: live, ID: id, Table: table, JobHash: jobHash,
			Closed: ErrClosed, Logf: logf,
			Channel: func(space uint16) core.SetupChannel { return setupChannel{newComm(w, worldCtx^uint64(space), nil)} }},
		w: w, tcp: t,
	}
}

// setupChannel is core.SetupChannel over a communicator of the world, in a message space apart
// from every user's.
type setupChannel struct{ c *Comm }

func (s setupChannel) Exchange(peers []int, mine []byte) ([][]byte, error) {
	reqs := make([]*Request, 0, len(peers))
	for _, r := range peers {
		reqs = append(reqs, Isend(s.c, mine, r, 1))
	}
	got := make([][]byte, len(peers))
	for i, r := range peers {
		op := s.c.irecv(nil, r, 1, true)
		if _, err := op.Req.Wait(); err != nil {
			return nil, fmt.Errorf("with rank %d: %w", r, err)
		}
		got[i] = op.Buf
	}
	if err := WaitAll(reqs...); err != nil {
		return nil, err
	}
	return got, nil
}

func (s setupChannel) AllgatherPair(a, b int64, seq uint64) ([]int64, error) {
	return s.c.allgatherPair(a, b, collTag(seq))
}
