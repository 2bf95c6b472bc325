package core

import (
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
)

// Liveness is the world's record of lost peers, which every network transport is given at
// set-up.
type Liveness interface {
	// Lose reports world rank rank lost, for the first cause found (a link that ended, a silent
	// peer, a protocol error): every transport fails what it has pending with the peer (its
	// Transport.PeerLost) and the engine fails the receives that need it. Later reports of the
	// same rank do nothing, so a transport that found the loss itself may report it after
	// failing its own link, and is told again harmlessly.
	Lose(rank int, cause error)
	// Lost reports whether the peer rank, silent for silent, is to be declared lost, and what
	// was found of it, for the error. A peer on this host whose process still runs is not.
	Lost(rank int, silent time.Duration) (bool, string)
	// Answers reports whether the peer rank was heard from over the TCP mesh (data or a
	// heartbeat) within the peer timeout: a transport whose own link to it went silent learns
	// that its link, not the peer, failed.
	Answers(rank int) bool
}

// Setup is what a data transport's set-up gets from the bootstrap, once the TCP mesh is up.
type Setup struct {
	Rank, Size int
	Eng        *Engine
	Live       Liveness
	ID         boot.Identity   // this rank's identity, with the job's secret
	Table      []boot.RankInfo // the rendezvous table, by world rank
	JobHash    uint64          // a digest of the job's identity, which shared names carry
	// Closed is the error of a send on a finalized world (comm.ErrClosed).
	Closed error
	// Logf reports what a rank logs (a link closed on a protocol error).
	Logf func(format string, args ...any)
	// Channel returns the means to exchange set-up values with other ranks over the mesh, in a
	// message space of its own, named by space (every transport its own).
	Channel func(space uint16) SetupChannel
}

// SetupChannel exchanges a transport's set-up values with other ranks over the TCP mesh.
type SetupChannel interface {
	// Exchange sends mine to each rank of peers and returns what each of them sent to this
	// rank, in the order of peers; each of those ranks calls Exchange with this rank among
	// its peers. An error names the rank it came from.
	Exchange(peers []int, mine []byte) ([][]byte, error)
	// AllgatherPair gathers a pair of values from every rank of the world: elements 2r and
	// 2r+1 are rank r's. Every rank calls it, with the same seq for the same gather.
	AllgatherPair(a, b int64, seq uint64) ([]int64, error)
}

// A DirectLink is a transport's link to one peer with allocation-free blocking Send and Recv
// of small messages, which a communicator uses when that transport carries every peer. Each
// method reports false, having done nothing, where the general path (a Request through the
// engine, which also produces every error) must take the operation. ctx is the calling
// communicator's message space, index translates world ranks to its ranks (nil: the world),
// and patient says that the caller waits without polling. The caller checked the arguments.
type DirectLink interface {
	SendDirect(ctx uint64, patient bool, b []byte, tag int) (bool, error)
	// RecvDirect receives from world rank ws, waiting for the message.
	RecvDirect(ctx uint64, index map[int]int, patient bool, b []byte, ws, tag int) (bool, Status, error)
	// RecvNow is RecvDirect that takes a message only if it has arrived (Irecv's fast path).
	RecvNow(ctx uint64, index map[int]int, patient bool, b []byte, ws, tag int) (bool, Status, error)
	// EagerMax is the largest message SendDirect returns from once it is buffered (larger
	// ones wait for the receiver).
	EagerMax() int
}

// A Director is a transport that has direct links (DirectLink) to its peers.
type Director interface {
	// DirectTo returns the direct link to world rank rank, or nil.
	DirectTo(rank int) DirectLink
}

// A ProgressSource is a transport whose waiters drive its progress (Progressor), and that can
// be polled beside the TCP links: PollOnce is one non-blocking pass, reporting whether
// anything happened.
type ProgressSource interface {
	Progressor
	PollOnce() bool
}
