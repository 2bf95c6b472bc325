// Package coretest gives a transport's tests, in one process, what comm gives a transport at
// set-up: the set-up exchanges of a world of ranks (Hub, a core.SetupChannel per rank) and a
// liveness that records losses (Live). Only tests import it.
package coretest

import (
	"sync"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// Hub carries the set-up exchanges of a world of size ranks in memory.
type Hub struct {
	size  int
	mu    sync.Mutex
	cond  *sync.Cond
	boxes map[[2]int]chan []byte // by sender and receiver
	pairs map[uint64][]int64     // AllgatherPair's values, by seq
	count map[uint64]int         // how many ranks have given theirs, by seq
}

// NewHub returns the hub of a world of size ranks.
func NewHub(size int) *Hub {
	h := &Hub{size: size, boxes: map[[2]int]chan []byte{}, pairs: map[uint64][]int64{}, count: map[uint64]int{}}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// Channel returns rank's core.SetupChannel on the hub.
func (h *Hub) Channel(rank int) core.SetupChannel { return channel{h, rank} }

func (h *Hub) box(from, to int) chan []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.boxes[[2]int{from, to}]
	if b == nil {
		b = make(chan []byte, 4)
		h.boxes[[2]int{from, to}] = b
	}
	return b
}

type channel struct {
	h    *Hub
	rank int
}

func (c channel) Exchange(peers []int, mine []byte) ([][]byte, error) {
	for _, r := range peers {
		c.h.box(c.rank, r) <- append([]byte(nil), mine...)
	}
	got := make([][]byte, len(peers))
	for i, r := range peers {
		got[i] = <-c.h.box(r, c.rank)
	}
	return got, nil
}

func (c channel) AllgatherPair(a, b int64, seq uint64) ([]int64, error) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pairs[seq] == nil {
		h.pairs[seq] = make([]int64, 2*h.size)
	}
	h.pairs[seq][2*c.rank], h.pairs[seq][2*c.rank+1] = a, b
	h.count[seq]++
	h.cond.Broadcast()
	for h.count[seq] < h.size {
		h.cond.Wait()
	}
	return append([]int64(nil), h.pairs[seq]...), nil
}

// A PeerLoser is told of a lost peer: a transport (core.Transport's PeerLost).
type PeerLoser interface {
	PeerLost(rank int, cause error)
}

// Live is a core.Liveness that records the first loss of each peer and tells the rank's
// transport and engine, as comm's world does. No peer is lost to silence alone, and a peer
// answers until it is lost.
type Live struct {
	mu   sync.Mutex
	lost map[int]error
	tr   PeerLoser
	eng  *core.Engine
}

// NewLive returns the liveness of a rank whose engine is eng.
func NewLive(eng *core.Engine) *Live { return &Live{lost: map[int]error{}, eng: eng} }

// SetTransport names the transport that Lose tells, once it is set up.
func (l *Live) SetTransport(tr PeerLoser) {
	l.mu.Lock()
	l.tr = tr
	l.mu.Unlock()
}

func (l *Live) Lose(rank int, cause error) {
	l.mu.Lock()
	if _, ok := l.lost[rank]; ok {
		l.mu.Unlock()
		return
	}
	l.lost[rank] = cause
	tr := l.tr
	l.mu.Unlock()
	if tr != nil {
		tr.PeerLost(rank, cause)
	}
	l.eng.PeerFailed(rank, cause)
}

func (l *Live) Lost(int, time.Duration) (bool, string) { return false, "" }

func (l *Live) Answers(rank int) bool { return l.Cause(rank) == nil }

// Cause is the first cause reported for rank's loss, nil while it is not lost.
func (l *Live) Cause(rank int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost[rank]
}
