package comm

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
)

// captureLog collects what the package and the bootstrap log while a test runs.
func captureLog(t *testing.T) func() string {
	var mu sync.Mutex
	var lines []string
	old, oldBoot := logf, boot.Logf
	logf = func(format string, args ...any) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	boot.Logf = logf // the bootstrap's handshakes log refused connections
	t.Cleanup(func() { logf, boot.Logf = old, oldBoot })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}

// TestStrangersRefused: during the rendezvous, connections that are not gorun, speak another
// version, or do not know the secret are refused and logged, and the job still starts.
func TestStrangersRefused(t *testing.T) {
	logged := captureLog(t)
	coord := freePort(t)
	base := identity{Size: 2, Coord: coord, Secret: []byte("right"), JobID: "j", PeerTimeout: 10 * time.Second}
	type result struct {
		c   *Comm
		err error
	}
	rank0 := make(chan result, 1)
	go func() {
		id := base
		c, err := initTCP(id)
		rank0 <- result{c, err}
	}()
	dial := func() net.Conn {
		for i := 0; ; i++ {
			conn, err := net.Dial("tcp", coord)
			if err == nil {
				return conn
			}
			require.Less(t, i, 500, "rank 0 never listened")
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Each stranger must see its connection closed.
	closed := func(conn net.Conn) {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(conn)
		// EOF or a reset: closed by rank 0, not our deadline.
		if err != nil {
			require.NotContains(t, err.Error(), "timeout")
		}
		conn.Close()
	}
	// Not gorun at all.
	conn := dial()
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("x", 64)))
	closed(conn)
	// Wrong version.
	conn = dial()
	b := (&boot.Hello{Kind: boot.ConnRendezvous, Role: boot.RoleDialer, Rank: 1, Size: 2, Job: boot.Fnv64([]byte("j"))}).Marshal()
	binary.LittleEndian.PutUint16(b[4:], 1)
	conn.Write(b)
	closed(conn)
	// Wrong secret: a full handshake attempt by a rank of "another job" with the same id.
	conn = dial()
	bad := base
	bad.Rank, bad.Secret = 1, []byte("wrong")
	err := boot.DialHandshake(conn, bad.Secret, boot.ConnRendezvous, 1, 2, boot.Fnv64([]byte("j")), 0, time.Now().Add(5*time.Second))
	require.ErrorIs(t, err, boot.ErrHandshakeRefused)
	conn.Close()
	// The real rank 1 still gets in.
	good := base
	good.Rank = 1
	c1, err := initTCP(good)
	require.NoError(t, err)
	r0 := <-rank0
	require.NoError(t, r0.err)
	done := make(chan error, 2)
	go func() { done <- Send(r0.c, []byte("hi"), 1, 0) }()
	buf := make([]byte, 2)
	_, err = Recv(c1, buf, 0, 0)
	require.NoError(t, err)
	require.Equal(t, "hi", string(buf))
	require.NoError(t, <-done)
	go func() { done <- r0.c.Finalize() }()
	require.NoError(t, c1.Finalize())
	require.NoError(t, <-done)
	log := logged()
	require.Contains(t, log, "bad magic")
	require.Contains(t, log, "version")
	require.Contains(t, log, "secret")
}
