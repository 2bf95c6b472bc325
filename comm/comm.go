package comm

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

const (
	// AnySource (-1) matches a message from any rank of the communicator (MPI_ANY_SOURCE).
	AnySource = core.AnySource
	// AnyTag (-1) matches any tag (MPI_ANY_TAG).
	AnyTag = core.AnyTag
	// Undefined as a Split color means the calling rank joins no new communicator.
	Undefined = -32766
	// MaxTag bounds user tags: valid tags are 0 <= tag < MaxTag.
	MaxTag = 1 << 30

	collTagBase = 1 << 20
	collTagSpan = MaxTag - collTagBase
	worldCtx    = uint64(0x676f72756e000000) // "gorun", low bit clear: p2p space of the world
)

// A transport moves messages between the world's ranks (route.go has the layers, the
// registry of transports and the route table; core.Transport the methods).
type transport = core.Transport

// world is one rank's view of the job: its engine, its transports, the route to each peer and
// how to abort.
type world struct {
	rank, size int
	eng        *core.Engine
	// trs: every transport of this rank, in registration order (route.go). Atomic: the
	// transports' own goroutines report lost peers (to all of them) while the set-up adds some.
	trs        atomic.Pointer[[]transport]
	routes     []route // by world rank: what carries messages to it (zero for this rank)
	host       string
	hostIDs    []string // by world rank: equal ids share a machine (bootstrap table)
	abort      func(rank, code int)
	closed     atomic.Bool
	finalizeMu sync.Mutex
	prog       core.Progressor // set when a transport needs waiters to drive progress
	lost       []atomic.Bool   // by world rank: the peer's loss was reported (liveness.go)
}

// newWorld makes rank's world of size ranks with no transports yet: every route empty.
func newWorld(rank, size int, host string, hostIDs []string) *world {
	return &world{rank: rank, size: size, eng: core.NewEngine(rank), host: host, hostIDs: hostIDs,
		routes: make([]route, size), lost: make([]atomic.Bool, size)}
}

// useOnly routes every peer through tr, the world's only transport.
func (w *world) useOnly(tr transport) {
	w.setTransports([]transport{tr})
	for r := range w.routes {
		if r != w.rank {
			w.routes[r].tr = tr
		}
	}
}

func (w *world) setTransports(trs []transport) { w.trs.Store(&trs) }

// transports returns the world's transports (none before the set-up).
func (w *world) transports() []transport {
	if p := w.trs.Load(); p != nil {
		return *p
	}
	return nil
}

// Comm is a communicator: a group of ranks with a message space of its own. Messages sent on one
// communicator are received only on the same communicator (its duplicates and splits included
// are separate). A Comm is safe for concurrent use.
type Comm struct {
	w     *world
	ctx   uint64
	group []int       // comm rank -> world rank; nil for the world communicator
	index map[int]int // world rank -> comm rank; nil for the world communicator
	rank  int
	sh    *commShared
	// patient: blocking calls on this view wait without polling (see Patient).
	patient bool
}

// commShared is state common to a communicator and its collective twin (Coll).
type commShared struct {
	seq  atomic.Uint64 // collective operations started (identical on every member)
	p2p  *Comm
	coll *Comm
}

func newComm(w *world, ctx uint64, group []int) *Comm {
	c := &Comm{w: w, ctx: ctx &^ 1, group: group, sh: &commShared{}}
	if group == nil {
		c.rank = w.rank
	} else {
		c.index = make(map[int]int, len(group))
		for r, wr := range group {
			c.index[wr] = r
		}
		c.rank = c.index[w.rank]
	}
	coll := *c
	coll.ctx |= 1
	c.sh.p2p, c.sh.coll = c, &coll
	return c
}

// Patient returns a view of c whose blocking calls wait without spinning: they sleep at once
// (over shared memory and TCP the transport's background goroutine, woken by the peer's
// records, completes their operations and wakes them; over RDMA they look again now and then,
// at most a millisecond apart), where a waiter on c polls continuously for a while first (the
// lowest latency when the caller has nothing else to do).
// It is for communication in the background of a computation, such as a look-ahead broadcast
// in a goroutine: a polling waiter there takes the core from the computation it overlaps, and
// the later wake-up costs less than that. The view is the same communicator: messages sent on
// either are received on either, and its Coll, Split and Dup are c's.
func (c *Comm) Patient() *Comm {
	if c.patient {
		return c
	}
	v := *c
	v.patient = true
	return &v
}

// Rank is the calling process's rank in c, from 0 to Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in c.
func (c *Comm) Size() int {
	if c.group == nil {
		return c.w.size
	}
	return len(c.group)
}

// Host is the name of the host this rank runs on.
func (c *Comm) Host() string { return c.w.host }

// HostID identifies the machine rank r of c runs on, as the transports compare them: ranks with
// equal ids share memory (GORUN_HOST_ID overrides a process's id). Known from the bootstrap, so
// it does not communicate; collectives use it to plan host-aware algorithms.
func (c *Comm) HostID(r int) string { return c.w.hostIDs[c.WorldRank(r)] }

// WorldRank translates a rank of c into its rank in the world communicator.
func (c *Comm) WorldRank(r int) int {
	if c.group == nil {
		return r
	}
	return c.group[r]
}

// commRank translates a world rank into c's numbering (-1 if not a member).
func (c *Comm) commRank(w int) int { return core.CommRank(c.index, w) }

// collComm returns the communicator over the same group whose message space is reserved for
// collective algorithms, so that their traffic never matches user point-to-point messages. It
// does not communicate.
func (c *Comm) collComm() *Comm { return c.sh.coll }

// nextCollTag returns the tag of the next collective operation on c. Every rank calls it in the
// same collective order and gets the same value, so overlapping non-blocking collectives use
// distinct tags. Tags cycle within [1<<20, 1<<30).
func (c *Comm) nextCollTag() int { return collTag(c.sh.seq.Add(1)) }

func collTag(seq uint64) int { return collTagBase + int(seq%collTagSpan) }

// Abort ends the whole job with the given exit code, as MPI_Abort: under gorun the process
// exits and the launcher stops the other ranks; under Run every rank's pending and later
// operations fail and Run returns an *AbortError. Abort does not return.
func (c *Comm) Abort(code int) { c.w.abort(c.w.rank, code) }

// Split partitions c into disjoint communicators, one per color, as MPI_Comm_split: ranks with
// the same color form a communicator ordered by key, ties broken by rank in c. A rank passing
// Undefined gets nil. Every rank of c must call it.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if color < 0 && color != Undefined {
		return nil, fmt.Errorf("comm: Split color %d must be >= 0 or Undefined", color)
	}
	seq := c.sh.seq.Add(1)
	all, err := c.allgatherPair(int64(color), int64(key), collTag(seq))
	if err != nil {
		return nil, fmt.Errorf("comm: Split: %w", err)
	}
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var members []member
	for r := 0; r < c.Size(); r++ {
		if int(all[2*r]) == color {
			members = append(members, member{int(all[2*r+1]), r})
		}
	}
	sort.SliceStable(members, func(i, j int) bool {
		if members[i].key != members[j].key {
			return members[i].key < members[j].key
		}
		return members[i].rank < members[j].rank
	})
	group := make([]int, len(members))
	for i, m := range members {
		group[i] = c.WorldRank(m.rank)
	}
	// Every member derives the same context from the parent's and the operation's sequence
	// number; colors share it safely since their groups are disjoint.
	return newComm(c.w, mixCtx(c.ctx, seq), group), nil
}

// Dup returns a communicator with the same group and a separate message space. Collective.
func (c *Comm) Dup() (*Comm, error) { return c.Split(0, c.Rank()) }

// mixCtx derives a child context id (splitmix64 finalizer over parent and sequence).
func mixCtx(parent, seq uint64) uint64 {
	z := parent ^ (seq * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return z &^ 1
}

// allgatherPair gathers two int64 per rank on c's collective space: through rank 0, which is
// plenty for communicator management (not a data path).
func (c *Comm) allgatherPair(a, b int64, tag int) ([]int64, error) {
	cc := c.collComm()
	n := c.Size()
	all := make([]int64, 2*n)
	all[2*c.rank], all[2*c.rank+1] = a, b
	if c.rank != 0 {
		if err := Send(cc, all[2*c.rank:2*c.rank+2], 0, tag); err != nil {
			return nil, err
		}
		if _, err := Recv(cc, all, 0, tag); err != nil {
			return nil, err
		}
		return all, nil
	}
	for r := 1; r < n; r++ {
		if _, err := Recv(cc, all[2*r:2*r+2], r, tag); err != nil {
			return nil, err
		}
	}
	reqs := make([]*Request, 0, n)
	for r := 1; r < n; r++ {
		reqs = append(reqs, Isend(cc, all, r, tag))
	}
	return all, WaitAll(reqs...)
}

// barrier is a simple gather-release barrier for Finalize (collectives has the fast one).
func (c *Comm) barrier() error {
	_, err := c.allgatherPair(0, 0, c.nextCollTag())
	return err
}

// Finalize ends the rank's participation in the job, as MPI_Finalize: a barrier over the world,
// then the transports close. Every rank calls it on the world communicator. Operations after it
// fail with ErrClosed.
func (c *Comm) Finalize() error {
	c.w.finalizeMu.Lock()
	defer c.w.finalizeMu.Unlock()
	if c.w.closed.Load() {
		return nil
	}
	if c.group != nil {
		return fmt.Errorf("comm: Finalize must be called on the world communicator")
	}
	err := c.barrier()
	c.w.closed.Store(true)
	if ferr := c.w.finalizeTransports(); err == nil {
		err = ferr
	}
	c.w.eng.Shutdown(ErrClosed)
	return err
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
