package comm

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLivenessOnThisHost: a silent peer on this host whose process exists and may run is not
// lost, however long it is silent (it may be waiting for a CPU); stopped, dead or gone it is
// lost after the peer timeout. A peer on another host, or one sharing this process, is judged
// by silence alone.
func TestLivenessOnThisHost(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	table := []rankInfo{
		{Rank: 0, HostID: "h", PID: os.Getpid()},
		{Rank: 1, HostID: "h", PID: cmd.Process.Pid},
		{Rank: 2, HostID: "other", PID: cmd.Process.Pid},
		{Rank: 3, HostID: "h", PID: os.Getpid()}, // a goroutine rank of this process
	}
	const timeout = time.Second
	l := newLiveness(timeout, table, 0)
	lost := func(r int, silent time.Duration) bool { ok, _ := l.lost(r, silent); return ok }
	for r := 1; r <= 3; r++ {
		require.False(t, lost(r, timeout/2), "rank %d within the timeout", r)
	}
	require.False(t, lost(1, time.Hour), "a running local peer is never lost on silence")
	require.True(t, lost(2, 2*timeout), "a remote peer is judged by silence")
	require.True(t, lost(3, 2*timeout), "a peer in this process is judged by silence")

	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	waitState(t, cmd.Process.Pid, 'T')
	ok, why := l.lost(1, 2*timeout)
	require.True(t, ok, "a stopped peer is lost")
	require.Contains(t, why, "state T")
	require.False(t, lost(1, timeout/2))

	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	waitState(t, cmd.Process.Pid, 'S')
	require.False(t, lost(1, time.Hour))

	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	ok, why = l.lost(1, 2*timeout)
	require.True(t, ok, "a gone peer is lost")
	require.Contains(t, why, "is gone")
}

func waitState(t *testing.T, pid int, want byte) {
	for i := 0; ; i++ {
		if st, ok := readProcState(pid); ok && st.state == want {
			return
		}
		require.Less(t, i, 1000, "process %d never reached state %c", pid, want)
		time.Sleep(5 * time.Millisecond)
	}
}
