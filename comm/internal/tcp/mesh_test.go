package tcp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/core/coretest"
	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// errFinalized stands for comm.ErrFinalized in these tests.
var errFinalized = errors.New("finalized (test)")

// logLines collects what is logged while a test runs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// captureLog sends the bootstrap's log (refused connections) to the returned lines while the
// test runs.
func captureLog(t *testing.T) *logLines {
	l := &logLines{}
	old := boot.Logf
	boot.Logf = l.logf
	t.Cleanup(func() { boot.Logf = old })
	return l
}

// meshOf connects the meshes of a world of n ranks in this process over loopback. Each rank's
// mesh carries every peer's data, as where no other transport is set up.
func meshOf(t *testing.T, n int, log *logLines) []*Transport {
	t.Helper()
	return meshWith(t, n, log, func(*Config) {})
}

// meshWith is meshOf with each rank's Config adjusted by set.
func meshWith(t *testing.T, n int, log *logLines, set func(*Config)) []*Transport {
	t.Helper()
	jobID := fmt.Sprintf("tcp-test-%d", time.Now().UnixNano())
	table := make([]boot.RankInfo, n)
	lns := make([]net.Listener, n)
	for r := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[r] = ln
		table[r] = boot.RankInfo{Rank: r, Addr: ln.Addr().String()}
	}
	trs := make([]*Transport, n)
	lives := make([]*coretest.Live, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		eng := core.NewEngine(r)
		lives[r] = coretest.NewLive(eng)
		cfg := Config{ID: boot.Identity{Rank: r, Size: n, Secret: []byte("s"), JobID: jobID, PeerTimeout: 10 * time.Second},
			JobHash: boot.Fnv64([]byte(jobID)), Table: table, Listener: lns[r], Deadline: time.Now().Add(30 * time.Second),
			Eng: eng, Live: lives[r], Finalized: errFinalized, Logf: log.logf}
		set(&cfg)
		wg.Go(func() { trs[r], errs[r] = Connect(cfg) })
	}
	wg.Wait()
	for _, ln := range lns {
		ln.Close()
	}
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
		lives[r].SetTransport(trs[r])
		var others []int
		for q := range n {
			if q != r {
				others = append(others, q)
			}
		}
		trs[r].CarryData(others)
	}
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Close(errors.New("test over"))
		}
	})
	return trs
}

// recv posts a receive of len(buf) bytes from world rank src on tr's engine and waits for it,
// driving tr's progress.
func recv(tr *Transport, buf []byte, src int, ctx uint64, tag int) (core.Status, error) {
	op := &core.RecvOp{Src: src, Ctx: ctx, Tag: tag, Buf: buf}
	op.Req.Prog = tr
	tr.eng.Post(op)
	return op.Req.Wait()
}

// TestSendReceive: an eager message and a large one (request to send, then data frames of at
// most dataChunk bytes) arrive whole and in order, and Finalize ends both ranks cleanly.
func TestSendReceive(t *testing.T) {
	trs := meshOf(t, 2, &logLines{})
	small := []byte("ping1234")
	large := make([]byte, 2*dataChunk+12345)
	for i := range large {
		large[i] = byte(i*7 + i>>13)
	}
	sent := make(chan error, 1)
	go func() {
		a, b := core.NewRequest(), core.NewRequest()
		trs[0].Send(1, 5, 3, small, a)
		trs[0].Send(1, 5, 4, large, b)
		_, err := a.Wait()
		if err == nil {
			b.Prog = trs[0]
			_, err = b.Wait()
		}
		sent <- err
	}()
	got := make([]byte, len(small))
	st, err := recv(trs[1], got, 0, 5, 3)
	require.NoError(t, err)
	require.Equal(t, small, got)
	require.Equal(t, core.Status{Source: 0, Tag: 3, Count: len(small)}, st)
	gotLarge := make([]byte, len(large))
	st, err = recv(trs[1], gotLarge, 0, 5, 4)
	require.NoError(t, err)
	require.Equal(t, len(large), st.Count)
	require.True(t, bytes.Equal(large, gotLarge), "the large message arrived altered")
	require.NoError(t, <-sent)
	// The mesh heard rank 0 just now; it knows nothing of ranks it has no link to.
	require.True(t, trs[1].Answers(0))
	require.False(t, trs[1].Answers(1))
	require.False(t, trs[1].Answers(2))
	done := make(chan error, 1)
	go func() { done <- trs[0].Finalize() }()
	require.NoError(t, trs[1].Finalize())
	require.NoError(t, <-done)
}

// TestOversubscribedWaiterSleeps: on an oversubscribed host a waiter whose polls find nothing
// sleeps in poll(2) on its data links; messages that come later (an eager one and a large one
// from one peer, an eager one from another) still arrive whole, and a peer that goes away
// ends a sleeping receive with its PeerError.
func TestOversubscribedWaiterSleeps(t *testing.T) {
	trs := meshWith(t, 3, &logLines{}, func(c *Config) { c.Oversubscribed = true })
	large := make([]byte, dataChunk+54321)
	for i := range large {
		large[i] = byte(i*13 + i>>11)
	}
	sent := make(chan error, 2)
	go func() {
		time.Sleep(50 * time.Millisecond) // the receiver is asleep on its links by now
		a, b := core.NewRequest(), core.NewRequest()
		trs[0].Send(1, 7, 1, []byte("first"), a)
		trs[0].Send(1, 7, 2, large, b)
		_, err := a.Wait()
		if err == nil {
			b.Prog = trs[0]
			_, err = b.Wait()
		}
		sent <- err
	}()
	go func() {
		time.Sleep(80 * time.Millisecond)
		a := core.NewRequest()
		trs[2].Send(1, 7, 3, []byte("from two"), a)
		_, err := a.Wait()
		sent <- err
	}()
	got := make([]byte, 5)
	_, err := recv(trs[1], got, 0, 7, 1)
	require.NoError(t, err)
	require.Equal(t, "first", string(got))
	gotLarge := make([]byte, len(large))
	st, err := recv(trs[1], gotLarge, 0, 7, 2)
	require.NoError(t, err)
	require.Equal(t, len(large), st.Count)
	require.True(t, bytes.Equal(large, gotLarge), "the large message arrived altered")
	got = make([]byte, 8)
	_, err = recv(trs[1], got, 2, 7, 3)
	require.NoError(t, err)
	require.Equal(t, "from two", string(got))
	require.NoError(t, <-sent)
	require.NoError(t, <-sent)

	go func() {
		time.Sleep(50 * time.Millisecond)
		trs[2].Close(errors.New("rank 2 went away"))
	}()
	_, err = recv(trs[1], make([]byte, 4), 2, 7, 4)
	var perr *core.PeerError
	require.ErrorAs(t, err, &perr)
	require.Equal(t, 2, perr.Rank)
}

// TestProtocolViolation: a peer (that knows the secret) sending a frame over the limit is cut
// off with a logged protocol error, and a receive waiting on it gets an error instead of a hang.
func TestProtocolViolation(t *testing.T) {
	log := &logLines{}
	trs := meshOf(t, 2, log)
	// Write a forged oversized eager header on rank 1's link to rank 0.
	p := trs[1].peers[0]
	var hb [wire.HeaderSize]byte
	(&wire.Header{Type: wire.Eager, Length: eagerLimit + 1}).Put(hb[:])
	p.wmu.Lock()
	require.NoError(t, p.writeAll(hb[:], nil))
	p.wmu.Unlock()
	_, err := recv(trs[0], make([]byte, 8), 1, 0, 0)
	var pe *core.PeerError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Rank)
	require.Contains(t, err.Error(), "protocol error")
	require.Contains(t, log.String(), "protocol error from rank 1")
	require.Contains(t, log.String(), "exceeds")
}

// meshTarget is one rank's data listener accepting the ranks above it (acceptMesh), alone.
type meshTarget struct {
	t       *Transport
	ln      net.Listener
	addr    string
	jobHash uint64
	done    chan error
}

func newMeshTarget(t *testing.T, rank, size int, secret string) *meshTarget {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	id := boot.Identity{Rank: rank, Size: size, Secret: []byte(secret), JobID: "mesh"}
	m := &meshTarget{t: &Transport{rank: rank, eng: core.NewEngine(rank), peers: make([]*tcpPeer, size)}, ln: ln, addr: ln.Addr().String(),
		jobHash: boot.Fnv64([]byte(id.JobID)), done: make(chan error, 1)}
	table := make([]boot.RankInfo, size)
	for r := range table {
		table[r] = boot.RankInfo{Rank: r, Addr: "127.0.0.1:" + strconv.Itoa(r+1)}
	}
	go func() {
		m.done <- acceptMesh(m.t, ln, id, m.jobHash, table, time.Now().Add(30*time.Second))
	}()
	return m
}

func (m *meshTarget) peer(r int) *tcpPeer {
	m.t.meshMu.Lock()
	defer m.t.meshMu.Unlock()
	return m.t.peers[r]
}

func (m *meshTarget) close() {
	m.ln.Close()
	<-m.done
	for _, p := range m.t.peers {
		if p != nil {
			p.closeFD()
		}
	}
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	return conn
}

// TestMeshWrongSecretRefused: a rank with another secret is refused on a data listener.
func TestMeshWrongSecretRefused(t *testing.T) {
	log := captureLog(t)
	m := newMeshTarget(t, 0, 2, "right")
	conn := dialT(t, m.addr)
	err := boot.DialHandshake(conn, []byte("wrong"), boot.ConnMesh, 1, 2, m.jobHash, 0, time.Now().Add(10*time.Second))
	conn.Close()
	require.ErrorIs(t, err, boot.ErrHandshakeRefused)
	m.close()
	require.Nil(t, m.t.peers[1])
	require.Contains(t, log.String(), "rank 1 does not know the job secret")
}

// TestMeshForgedIdentity: a rank's data listener admits only the ranks that are to dial it,
// each once, and only with the secret: a forged identity or a second connection claiming a
// rank that connected is refused, and the real links stay.
func TestMeshForgedIdentity(t *testing.T) {
	logged := captureLog(t)
	const secret = "mesh-secret"
	m := newMeshTarget(t, 1, 4, secret) // rank 1 of 4: ranks 2 and 3 dial it
	hs := func(s string, claim uint32) error {
		conn := dialT(t, m.addr)
		defer conn.Close()
		return boot.DialHandshake(conn, []byte(s), boot.ConnMesh, claim, 4, m.jobHash, 1, time.Now().Add(10*time.Second))
	}
	// Without the secret, claiming rank 2: refused, and rank 2's slot stays free.
	require.ErrorIs(t, hs("guess", 2), boot.ErrHandshakeRefused)
	require.Nil(t, m.peer(2))
	// With the secret, claiming a rank that never dials rank 1: refused before any hello.
	var cut boot.ErrCutOff
	require.ErrorAs(t, hs(secret, 0), &cut)
	// The real rank 2.
	require.NoError(t, hs(secret, 2))
	var p2 *tcpPeer
	for i := 0; p2 == nil; i++ {
		require.Less(t, i, 1000, "rank 2 was not registered")
		time.Sleep(5 * time.Millisecond)
		p2 = m.peer(2)
	}
	// With the secret, rank 2 again: refused; the first link stays.
	require.ErrorAs(t, hs(secret, 2), &cut)
	require.Same(t, p2, m.peer(2))
	// Rank 3 completes the mesh.
	require.NoError(t, hs(secret, 3))
	require.NoError(t, <-m.done)
	m.done <- nil
	require.NotNil(t, m.peer(3))
	m.close()
	log := logged.String()
	// The order of the lines is the order in which the acceptor's goroutines logged.
	require.Contains(t, log, "gorun: rank 1: refused connection from 127.0.0.1: ")
	require.Contains(t, log, "rank 2 does not know the job secret")
	require.Contains(t, log, "rank 0 is not one of the ranks that dial rank 1")
	require.Contains(t, log, "rank 2 connected already")
}
