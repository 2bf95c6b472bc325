//go:build linux || darwin

package verbstp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/core/coretest"
	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// The tests here run two ranks of the protocol in one process over the software verbs device,
// each with its own engine, set up over an in-memory stand-in for the TCP mesh (coretest.Hub)
// and a liveness that records losses (coretest.Live). Tests through comm's API (GORUN_TRANSPORT=verbs,
// ranks as processes, faults of the device) are comm's.

// logs collects what the ranks log.
type logs struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pair sets up the verbs transports of a world of two ranks in this process over the software
// device, GORUN_VERBS_QP=qp.
func pair(t *testing.T, qp string) ([2]*Transport, [2]*coretest.Live, *logs) {
	t.Helper()
	t.Setenv(jobenv.RDMADevice, ibv.SoftName)
	t.Setenv(jobenv.VerbsQP, qp)
	h := coretest.NewHub(2)
	jobID := fmt.Sprintf("verbstp-test-%d-%d", os.Getpid(), time.Now().UnixNano())
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
	log := &logs{}
	for r := range 2 {
		eng := core.NewEngine(r)
		lives[r] = coretest.NewLive(eng)
		s := &core.Setup{Rank: r, Size: 2, Eng: eng, Live: lives[r],
			ID:    boot.Identity{Rank: r, Size: 2, JobID: jobID, PeerTimeout: 10 * time.Second},
			Table: table, JobHash: boot.Fnv64([]byte(jobID)), Closed: errors.New("closed (test)"), Logf: log.logf,
			Channel: func(uint16) core.SetupChannel { return h.Channel(r) }}
		wg.Go(func() { trs[r], errs[r] = setupVerbs(s) })
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
	return trs, lives, log
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

// TestVerbsMessages: messages of every protocol path arrive whole and in order between two
// ranks set up from core.Setup: eager SENDs, large ones staged through the buffers (UC, or RC
// below the zero-copy threshold), large ones written straight into the receiver's buffer
// (RC); with RC refused by the device, the set-up settles on UC and says so.
func TestVerbsMessages(t *testing.T) {
	sizes := []int{0, 1, 100, verbsEagerMax, verbsEagerMax + 1, verbsZCMin - 1, verbsZCMin, 1<<20 + 123}
	for _, tc := range []struct {
		name, qp string
		noRC     bool
		want     ibv.QPType
	}{{"rc", "rc", false, ibv.RC}, {"uc", "uc", false, ibv.UC}, {"uc-fallback", "auto", true, ibv.UC}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noRC {
				t.Setenv(ibv.SoftNoRCEnv, "1")
			}
			trs, lives, log := pair(t, tc.qp)
			for r, tr := range trs {
				if tr.typ != tc.want {
					t.Fatalf("rank %d: %v queue pairs, want %v", r, tr.typ, tc.want)
				}
			}
			if tc.noRC && !strings.Contains(log.String(), "using UC") {
				t.Fatalf("RC refused, but the set-up did not say it uses UC; log:\n%s", log)
			}
			const ctx = 7
			msg := func(i, n int) []byte {
				b := make([]byte, n)
				for j := range b {
					b[j] = byte(j*13 + i + j>>10)
				}
				return b
			}
			within(t, "messages over verbs", func() {
				sends := make([]*core.Request, len(sizes))
				for i, n := range sizes {
					req := core.NewRequest()
					req.Prog = trs[0]
					trs[0].Send(1, ctx, i, msg(i, n), req)
					sends[i] = req
				}
				for i, n := range sizes {
					r := &core.RecvOp{Src: 0, Ctx: ctx, Tag: i, Buf: make([]byte, n+3)}
					r.Req.Prog = trs[1]
					trs[1].eng.Post(r)
					st, err := r.Req.Wait()
					if err != nil || st.Count != n || st.Source != 0 || st.Tag != i {
						t.Errorf("%d-byte receive: status %+v, error %v", n, st, err)
						continue
					}
					if !bytes.Equal(r.Buf[:n], msg(i, n)) {
						t.Errorf("%d-byte message arrived altered", n)
					}
				}
				for i, req := range sends {
					if _, err := req.Wait(); err != nil {
						t.Errorf("%d-byte send: %v", sizes[i], err)
					}
				}
			})
			// Each large message on RC went by zero-copy write (the sender numbers them), none on UC.
			zc := 0
			if tc.want == ibv.RC {
				for _, n := range sizes {
					if n >= verbsZCMin {
						zc++
					}
				}
			}
			trs[0].mu.Lock()
			got := trs[0].nextZC
			trs[0].mu.Unlock()
			if int(got) != zc {
				t.Errorf("%d zero-copy writes, want %d", got, zc)
			}
			for r := range 2 {
				if cause := lives[r].Cause(1 - r); cause != nil {
					t.Fatalf("rank %d lost its peer: %v", r, cause)
				}
			}
		})
	}
}

// TestVerbsProtocolErrorFailsLink: a message of an unknown type (a peer of another build)
// ends the link on the receiver with an error naming the peer: the receive waiting for that
// peer fails, the loss is reported to the world as the peer's, and the error is logged.
func TestVerbsProtocolErrorFailsLink(t *testing.T) {
	trs, lives, log := pair(t, "rc")
	p := trs[0].peers[1]
	trs[0].mu.Lock()
	ok := p.postMessage(&wire.Header{Type: 0x7e, Tag: 1}, nil)
	trs[0].mu.Unlock()
	if !ok {
		t.Fatal("no credit or staging buffer for the first message")
	}
	r := &core.RecvOp{Src: 0, Ctx: 7, Tag: 1, Buf: make([]byte, 8)}
	r.Req.Prog = trs[1]
	trs[1].eng.Post(r)
	var err error
	within(t, "a receive from a peer that sent a malformed message", func() { _, err = r.Req.Wait() })
	var pe *core.PeerError
	if !errors.As(err, &pe) || pe.Rank != 0 || !strings.Contains(err.Error(), "protocol error") {
		t.Fatalf("receive after a message of unknown type: %v, want rank 0's protocol error", err)
	}
	if cause := lives[1].Cause(0); cause == nil || !strings.Contains(cause.Error(), "unknown frame type") {
		t.Fatalf("loss reported to the world: %v, want the unknown frame type", cause)
	}
	if cause := lives[1].Cause(1); cause != nil {
		t.Fatalf("rank 1 reported itself lost: %v", cause)
	}
	if !strings.Contains(log.String(), "protocol error from rank 0 over RDMA") {
		t.Fatalf("the protocol error was not logged; log:\n%s", log)
	}
}

// TestVerbsSetupNamesBadDevice: a device that does not exist fails the set-up of the rank that
// names it with an error naming the device, before any exchange.
func TestVerbsSetupNamesBadDevice(t *testing.T) {
	t.Setenv(jobenv.RDMADevice, "mlx5_nowhere")
	eng := core.NewEngine(0)
	s := &core.Setup{Rank: 0, Size: 2, Eng: eng, Live: coretest.NewLive(eng),
		ID:    boot.Identity{Rank: 0, Size: 2, PeerTimeout: time.Second},
		Table: []boot.RankInfo{{Rank: 0, HostID: "a"}, {Rank: 1, HostID: "b"}}, Closed: errors.New("closed (test)"), Logf: t.Logf,
		Channel: func(uint16) core.SetupChannel { t.Fatal("exchange before the device opened"); return nil }}
	tr, reach, err := Setup(s)
	if err == nil || tr != nil || reach != nil {
		t.Fatalf("set-up on a missing device: transport %v, error %v", tr, err)
	}
	if !strings.Contains(err.Error(), `"mlx5_nowhere"`) || !strings.Contains(err.Error(), "RDMA setup") {
		t.Fatalf("error %q does not name the device and the RDMA set-up", err)
	}
}
