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
	"github.com/gorun-hpc/gorun/comm/internal/core/coretest"
	"github.com/gorun-hpc/gorun/comm/internal/shm"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// The tests here run two ranks of the protocol in one process, each with its own engine, set
// up over an in-memory stand-in for the TCP mesh (coretest.Hub) and a liveness that records losses
// (coretest.Live). Tests through comm's API, over every transport, are comm's.

func pair(t *testing.T) ([2]*Transport, [2]*coretest.Live) {
	t.Helper()
	h := coretest.NewHub(2)
	jobID := fmt.Sprintf("shmtp-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	var table []boot.RankInfo
	for r := range 2 {
		table = append(table, boot.RankInfo{Rank: r, Host: "here", HostID: "here", PID: os.Getpid()})
	}
	var (
		trs   [2]*Transport
		lives [2]*coretest.Live
		errs  [2]error
		wg    sync.WaitGroup
	)
	for r := range 2 {
		eng := core.NewEngine(r)
		lives[r] = coretest.NewLive(eng)
		s := &core.Setup{Rank: r, Size: 2, Eng: eng, Live: lives[r], ID: boot.Identity{Rank: r, Size: 2, JobID: jobID},
			Table: table, JobHash: boot.Fnv64([]byte(jobID)), Closed: errors.New("closed (test)"), Logf: t.Logf,
			Channel: func(uint16) core.SetupChannel { return h.Channel(r) }}
		wg.Go(func() { trs[r], errs[r] = setupShm(s) })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: set-up: %v", r, errs[r])
		}
	}
	for r := range 2 {
		lives[r].SetTransport(trs[r])
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
	if cause := lives[1].Cause(0); cause == nil || !strings.Contains(cause.Error(), "corrupt shared-memory ring") {
		t.Fatalf("loss reported to the world: %v, want the corrupt ring", cause)
	}
	if cause := lives[1].Cause(1); cause != nil {
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
