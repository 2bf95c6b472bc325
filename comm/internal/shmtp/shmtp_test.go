//go:build linux || darwin

package shmtp

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/shm"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// The tests here run two ranks of the protocol in one process, each with its own engine, set
// up over an in-memory stand-in for the TCP mesh (hub) and a liveness that records losses
// (testLive). Tests through comm's API, over every transport, are comm's.

// hub carries the set-up exchanges of a world of size ranks in memory.
type hub struct {
	size  int
	mu    sync.Mutex
	cond  *sync.Cond
	boxes map[[2]int]chan []byte // by sender and receiver
	pairs map[uint64][]int64     // AllgatherPair's values, by seq
	count map[uint64]int         // how many ranks have given theirs, by seq
}

func newHub(size int) *hub {
	h := &hub{size: size, boxes: map[[2]int]chan []byte{}, pairs: map[uint64][]int64{}, count: map[uint64]int{}}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (h *hub) box(from, to int) chan []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.boxes[[2]int{from, to}]
	if b == nil {
		b = make(chan []byte, 4)
		h.boxes[[2]int{from, to}] = b
	}
	return b
}

// channel is one rank's core.SetupChannel on a hub.
type channel struct {
	h    *hub
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

// testLive is a core.Liveness that records the first loss of each peer and tells the rank's
// transport and engine, as comm's world does; no peer is ever lost to silence.
type testLive struct {
	mu   sync.Mutex
	lost map[int]error
	tr   *Transport
	eng  *core.Engine
}

func (l *testLive) Lose(rank int, cause error) {
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

func (l *testLive) Lost(int, time.Duration) (bool, string) { return false, "" }

// Answers: the test has no mesh; a peer answers until it is lost.
func (l *testLive) Answers(rank int) bool { return l.cause(rank) == nil }

func (l *testLive) cause(rank int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost[rank]
}

// pair sets up the shared-memory transports of a world of two ranks in this process.
func pair(t *testing.T) ([2]*Transport, [2]*testLive) {
	t.Helper()
	h := newHub(2)
	jobID := fmt.Sprintf("shmtp-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var table []boot.RankInfo
	for r := range 2 {
		table = append(table, boot.RankInfo{Rank: r, Host: "here", HostID: "here", PID: os.Getpid()})
	}
	var (
		trs   [2]*Transport
		lives [2]*testLive
		errs  [2]error
		wg    sync.WaitGroup
	)
	for r := range 2 {
		eng := core.NewEngine(r)
		lives[r] = &testLive{lost: map[int]error{}, eng: eng}
		s := &core.Setup{Rank: r, Size: 2, Eng: eng, Live: lives[r], ID: boot.Identity{Rank: r, Size: 2, JobID: jobID},
			Table: table, JobHash: boot.Fnv64([]byte(jobID)), Closed: errors.New("closed (test)"), Logf: t.Logf,
			Channel: func(uint16) core.SetupChannel { return channel{h, r} }}
		wg.Go(func() { trs[r], errs[r] = setupShm(s) })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: set-up: %v", r, errs[r])
		}
	}
	for r := range 2 {
		lives[r].mu.Lock()
		lives[r].tr = trs[r]
		lives[r].mu.Unlock()
	}
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Abandon(errors.New("test over"))
		}
	})
	return trs, lives
}

// within runs fn and fails the test if it takes longer than a minute (a hang).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s hung", what)
	}
}

// TestBrokenRingFailsLink: a record of an unknown type in the ring (a peer of another build,
// or memory written through a stray pointer) ends the link on the reader with an error naming
// the peer: the receive waiting for that peer fails, and the loss is reported to the world
// (which the engine hears of) as rank 0's, not rank 1's. The reader finds it
// while it holds the rings' poll lock, which failing the link must not take again.
func TestBrokenRingFailsLink(t *testing.T) {
	trs, lives := pair(t)
	p := trs[0].peers[1]
	h := wire.Header{Type: 0x7e, Tag: 1}
	p.out.Mu.Lock()
	ok := p.ringWrite(&h, nil)
	p.out.Mu.Unlock()
	if !ok {
		t.Fatal("the ring had no room for one record")
	}
	p.wakePeer()

	r := &core.RecvOp{Src: 0, Ctx: 7, Tag: 1, Buf: make([]byte, 8)}
	r.Req.Prog = trs[1]
	trs[1].eng.Post(r)
	var err error
	within(t, "a receive from a peer that broke the ring", func() { _, err = r.Req.Wait() })
	var pe *core.PeerError
	if !errors.As(err, &pe) || pe.Rank != 0 || !strings.Contains(err.Error(), "corrupt shared-memory ring") {
		t.Fatalf("receive after a record of unknown type: %v, want rank 0's corrupt ring", err)
	}
	if cause := lives[1].cause(0); cause == nil || !strings.Contains(cause.Error(), "corrupt shared-memory ring") {
		t.Fatalf("loss reported to the world: %v, want the corrupt ring", cause)
	}
	if cause := lives[1].cause(1); cause != nil {
		t.Fatalf("rank 1 reported itself lost: %v", cause)
	}
	if err := trs[1].eng.IsDead(0); err == nil {
		t.Fatal("the engine does not count rank 0 lost")
	}
}

// TestSplitCopyWriteRefused: a large message from a waiting sender is taken by a split copy
// (wire.Split); where the sender cannot write its part into the receiver's memory, the
// receiver reads that part itself (wire.FlagSplitFailed) and the message still arrives whole,
// for sizes around the threshold and not a multiple of a page; a truncating receive still
// gets its error.
func TestSplitCopyWriteRefused(t *testing.T) {
	var refused atomic.Int32
	shmCMAWrite = func(int, uint64, []byte) error {
		refused.Add(1)
		return errors.New("refused (test)")
	}
	defer func() { shmCMAWrite = shm.CMAWrite }()
	trs, _ := pair(t)
	if !trs[1].peers[0].cma {
		t.Skip("this host forbids cross-memory attach (ptrace policy): no split copies")
	}
	for _, tr := range trs {
		tr.oversubscribed = false // a split copy is taken on a host with a core per rank
	}
	sizes := []int{shmEagerLimit + 1, shmSplitMin - 1, shmSplitMin, shmSplitMin + 4097, 3<<20 + 123}
	const ctx = 7
	var sendErr, recvErr error
	within(t, "large messages by split copy", func() {
		var wg sync.WaitGroup
		wg.Go(func() {
			link := trs[0].DirectTo(1)
			for i, n := range append(sizes, 1<<20) {
				msg := make([]byte, n)
				for j := range msg {
					msg[j] = byte(j*7 + i + j>>12)
				}
				if ok, err := link.SendDirect(ctx, false, msg, i); !ok || err != nil {
					sendErr = fmt.Errorf("%d-byte send: taken %v, error %v", n, ok, err)
					return
				}
			}
		})
		link := trs[1].DirectTo(0)
		for i, n := range sizes {
			got := make([]byte, n+5)
			ok, st, err := link.RecvDirect(ctx, nil, false, got, 0, i)
			if !ok || err != nil || st.Count != n || st.Source != 0 || st.Tag != i {
				recvErr = fmt.Errorf("%d-byte receive: taken %v, status %+v, error %v", n, ok, st, err)
				return
			}
			for j := range n {
				if want := byte(j*7 + i + j>>12); got[j] != want {
					recvErr = fmt.Errorf("%d-byte message: byte %d is %d, want %d", n, j, got[j], want)
					return
				}
			}
		}
		var te *core.TruncateError
		if _, _, err := link.RecvDirect(ctx, nil, false, make([]byte, 1000), 0, len(sizes)); !errors.As(err, &te) {
			recvErr = fmt.Errorf("1 MiB into 1000 bytes: error %v, want a truncation", err)
		}
		wg.Wait()
	})
	if sendErr != nil || recvErr != nil {
		t.Fatalf("sender: %v; receiver: %v", sendErr, recvErr)
	}
	if refused.Load() == 0 {
		t.Fatal("no split copy was tried: the sender never wrote its part")
	}
}
