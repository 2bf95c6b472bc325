package comm

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
)

// startRanks runs initTCP for ranks of a job as goroutines and returns their results.
func startRanks(base identity, ranks ...int) chan rankResult {
	out := make(chan rankResult, len(ranks))
	for _, r := range ranks {
		go func() {
			id := base
			id.Rank = r
			c, err := initTCP(id)
			out <- rankResult{r, c, err}
		}()
	}
	return out
}

type rankResult struct {
	rank int
	c    *Comm
	err  error
}

// finishJob collects n ranks' results, checks that they work together (every rank sends its
// rank to rank 0) and finalizes them.
func finishJob(t *testing.T, results chan rankResult, n int) {
	t.Helper()
	comms := make([]*Comm, n)
	for range n {
		select {
		case r := <-results:
			require.NoError(t, r.err, "rank %d", r.rank)
			comms[r.rank] = r.c
		case <-time.After(60 * time.Second):
			t.Fatal("the ranks did not start")
		}
	}
	var wg sync.WaitGroup
	for r := 1; r < n; r++ {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, Send(comms[r], []byte{byte(r)}, 0, 3)) }()
	}
	for r := 1; r < n; r++ {
		b := make([]byte, 1)
		_, err := Recv(comms[0], b, r, 3)
		require.NoError(t, err)
		require.Equal(t, byte(r), b[0])
	}
	wg.Wait()
	for _, c := range comms {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, c.Finalize()) }()
	}
	wg.Wait()
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	for i := 0; ; i++ {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return conn
		}
		require.Less(t, i, 500, "nobody listens at %s", addr)
		time.Sleep(10 * time.Millisecond)
	}
}

// readAllFor reads what conn sends until it closes (or for at most d).
func readAllFor(conn net.Conn, d time.Duration) []byte {
	conn.SetReadDeadline(time.Now().Add(d))
	b, _ := io.ReadAll(conn)
	return b
}

// TestReflectionRefused: the attack on wire version 1, in which a process without the secret
// swaps the rendezvous server's hellos between two connections of its own, gets nowhere: the
// server speaks its hello only after the dialer's, refuses a hello that carries its own nonce,
// and proves nothing before the dialer has. The real ranks then register as usual.
func TestReflectionRefused(t *testing.T) {
	logged := captureLog(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const job, secret = "reflect", "k"
	jobHash := boot.Fnv64([]byte(job))
	served := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { served <- boot.ServeRendezvous(ln, 2, job, secret, 0, stop) }()

	// Connection 1: the attacker claims rank 0 and gets the server's hello.
	c1 := dialT(t, ln.Addr().String())
	defer c1.Close()
	h1 := boot.Hello{Kind: boot.ConnRendezvous, Role: boot.RoleDialer, Rank: 0, Size: 2, Job: jobHash}
	copy(h1.Nonce[:], "attacker's own nonce, 32 bytes!!")
	_, err = c1.Write(h1.Marshal())
	require.NoError(t, err)
	sb := make([]byte, boot.HelloSize)
	c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadFull(c1, sb)
	require.NoError(t, err)
	server, err := boot.ParseHello(sb)
	require.NoError(t, err)
	require.Equal(t, uint32(boot.LauncherID), server.Rank, "the launcher claims its own identity, not rank 0's")
	require.Equal(t, uint8(boot.RoleAcceptor), server.Role)
	// Nothing more comes until the attacker proves itself: no proof to relay.
	c1.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	n, _ := c1.Read(make([]byte, 1))
	require.Zero(t, n, "the server sent bytes before the dialer's proof")

	// Connection 2: the server's hello reflected back as is (role acceptor), then with the
	// role changed to the dialer's (it still carries the server's own nonce).
	for _, role := range []uint8{boot.RoleAcceptor, boot.RoleDialer} {
		c2 := dialT(t, ln.Addr().String())
		b := bytes.Clone(sb)
		b[7] = role
		if role == boot.RoleDialer {
			binary.LittleEndian.PutUint32(b[8:], 1) // a dialer claims a rank
		}
		c2.Write(b)
		require.Empty(t, readAllFor(c2, 10*time.Second), "reflected hello (role %d) was answered", role)
		c2.Close()
	}
	// Connection 1 cannot prove anything: a guessed proof is refused with the refusal marker.
	c1.Write(make([]byte, boot.ProofSize))
	got := readAllFor(c1, 10*time.Second)
	require.Equal(t, boot.RefusedProof, got)

	// The real ranks (rank 0 dials the launcher's rendezvous too) still register.
	base := identity{Size: 2, Coord: ln.Addr().String(), CoordByLauncher: true, Secret: []byte(secret), JobID: job, PeerTimeout: 10 * time.Second}
	finishJob(t, startRanks(base, 0, 1), 2)
	require.NoError(t, <-served)
	log := logged()
	require.Contains(t, log, "gorun launcher: refused")
	require.Contains(t, log, "reflected hello")
	require.Contains(t, log, "rank 0 does not know the job secret")
	require.NotContains(t, log, "registered twice")
}

// recordConn keeps a copy of what is written to the connection.
type recordConn struct {
	net.Conn
	wrote bytes.Buffer
}

func (c *recordConn) Write(b []byte) (int, error) {
	c.wrote.Write(b)
	return c.Conn.Write(b)
}

// TestReplayRefused: a dialer's hello and proof captured from a real handshake do not pass on
// a new connection (the acceptor's fresh nonce is in the proof).
func TestReplayRefused(t *testing.T) {
	logged := captureLog(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const job, secret = "replay", "k"
	jobHash := boot.Fnv64([]byte(job))
	served := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { served <- boot.ServeRendezvous(ln, 3, job, secret, 0, stop) }()

	rc := &recordConn{Conn: dialT(t, ln.Addr().String())}
	require.NoError(t, boot.DialHandshake(rc, []byte(secret), boot.ConnRendezvous, 1, 3, jobHash, boot.LauncherID, time.Now().Add(10*time.Second)))
	rc.Close() // no registration follows: refused as such
	captured := rc.wrote.Bytes()
	require.Len(t, captured, boot.HelloSize+boot.ProofSize)

	c := dialT(t, ln.Addr().String())
	_, err = c.Write(captured)
	require.NoError(t, err)
	got := readAllFor(c, 10*time.Second)
	c.Close()
	require.Len(t, got, boot.HelloSize+boot.ProofSize, "want the server's hello and the refusal")
	require.Equal(t, boot.RefusedProof, got[boot.HelloSize:])

	base := identity{Size: 3, Coord: ln.Addr().String(), CoordByLauncher: true, Secret: []byte(secret), JobID: job, PeerTimeout: 10 * time.Second}
	finishJob(t, startRanks(base, 0, 1, 2), 3)
	require.NoError(t, <-served)
	require.Contains(t, logged(), "rank 1 does not know the job secret")
}

// TestWrongSecretRefused: a rank with another secret is refused at the rendezvous and learns
// that the secrets differ. (comm/internal/tcp's TestMeshWrongSecretRefused: on a data listener.)
func TestWrongSecretRefused(t *testing.T) {
	captureLog(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	go boot.ServeRendezvous(ln, 2, "w", "right", 0, stop)
	bad := identity{Rank: 1, Size: 2, Coord: ln.Addr().String(), CoordByLauncher: true, Secret: []byte("wrong"), JobID: "w", PeerTimeout: 10 * time.Second}
	_, err = initTCP(bad)
	require.ErrorIs(t, err, boot.ErrHandshakeRefused)
	require.ErrorContains(t, err, "GORUN_SECRET")
}

// TestFloodCapped: strangers holding many connections open to the rendezvous delay the real
// ranks by one handshake timeout at most; the excess is closed at once and the refusals make
// a bounded number of log lines, with counts.
func TestFloodCapped(t *testing.T) {
	logged := captureLog(t)
	old := boot.HandshakeTimeout
	boot.HandshakeTimeout = 500 * time.Millisecond
	t.Cleanup(func() { boot.HandshakeTimeout = old })
	base := identity{Size: 3, Coord: freePort(t), Secret: []byte("f"), JobID: "flood", PeerTimeout: 10 * time.Second}
	results := startRanks(base, 0)
	first := dialT(t, base.Coord) // rank 0 listens
	const flood = 4 * boot.MaxUnauthenticated
	conns := []net.Conn{first}
	for range flood - 1 {
		c, err := net.Dial("tcp", base.Coord)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The connections beyond the cap are closed at once.
	closedNow := 0
	for _, c := range conns[boot.MaxUnauthenticated+8:] {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF || (err != nil && !os.IsTimeout(err)) {
			closedNow++
		}
	}
	require.Positive(t, closedNow)
	ranks := startRanks(base, 1, 2)
	go func() {
		for r := range ranks {
			results <- r
		}
	}()
	finishJob(t, results, 3)
	log := logged()
	lines := strings.Split(log, "\n")
	require.LessOrEqual(t, len(lines), 4, log)
	counted := regexp.MustCompile(`rank 0: refused (\d+) (more )?connections from 127.0.0.1`).FindStringSubmatch(log)
	require.NotNil(t, counted, log)
	n, _ := strconv.Atoi(counted[1])
	require.GreaterOrEqual(t, n, flood-boot.MaxUnauthenticated, log)
	require.Contains(t, log, "unauthenticated connections already")
}
