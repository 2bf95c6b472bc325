package comm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// Real-process tests: the test binary re-executes itself as the ranks of a job, with the
// environment gorun's launcher gives them, and each rank runs the role named in roleVar.

const roleVar = "GORUN_COMM_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleVar); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

func runRole(role string) int {
	c, err := Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 10
	}
	switch role {
	case "checks":
		for _, ch := range checks {
			if err := ch.fn(c); err != nil {
				fmt.Fprintf(os.Stderr, "rank %d: %s: %v\n", c.Rank(), ch.name, err)
				return 1
			}
		}
		if err := c.Finalize(); err != nil {
			fmt.Fprintf(os.Stderr, "rank %d: finalize: %v\n", c.Rank(), err)
			return 1
		}
		return 0
	case "wait-on-victim":
		// Rank 1 is the victim: it blocks; the test kills or stops it. Every other rank waits
		// for a message from it and must get an error naming it.
		if c.Rank() == 1 {
			fmt.Println("victim ready", os.Getpid())
			select {}
		}
		fmt.Println("waiting")
		start := time.Now()
		_, err := Recv(c, make([]byte, 8), 1, 0)
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 {
			fmt.Printf("rank %d: want a PeerError for rank 1, got %v\n", c.Rank(), err)
			return 1
		}
		fmt.Printf("rank %d: peer error after %v: %v\n", c.Rank(), time.Since(start).Round(time.Millisecond), err)
		return 0
	case "pingpong":
		// Rank 1 of the ping-pong benchmark: echo every message back until a zero-tag stop.
		buf := make([]byte, 64<<20)
		for {
			st, err := Recv(c, buf, 0, AnyTag)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if st.Tag == 0 {
				c.Finalize()
				return 0
			}
			if err := Send(c, buf[:st.Count], 0, st.Tag); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 2
}

// jobEnv is the environment gorun gives rank r of a job of n.
func jobEnv(t testing.TB, r, n int, coord string, extra ...string) []string {
	return append(append(os.Environ(),
		jobenv.Rank+"="+strconv.Itoa(r), jobenv.Size+"="+strconv.Itoa(n),
		jobenv.LocalRank+"="+strconv.Itoa(r), jobenv.Coord+"="+coord,
		jobenv.Secret+"=0123456789abcdef", jobenv.JobID+"=testjob"), extra...)
}

type proc struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func startJob(t testing.TB, n int, role string, extra ...string) []*proc {
	coord := freePort(t)
	procs := make([]*proc, n)
	for r := range procs {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		p.cmd.Env = jobEnv(t, r, n, coord, append([]string{roleVar + "=" + role}, extra...)...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		require.NoError(t, p.cmd.Start())
		procs[r] = p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		}
	})
	return procs
}

func waitJob(t *testing.T, procs []*proc, limit time.Duration) []int {
	codes := make([]int, len(procs))
	done := make(chan struct{})
	go func() {
		for r, p := range procs {
			p.cmd.Wait()
			codes[r] = p.cmd.ProcessState.ExitCode()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		for _, p := range procs {
			p.cmd.Process.Kill()
		}
		<-done
		t.Fatalf("job did not finish within %v", limit)
	}
	return codes
}

// TestProcesses runs the whole check suite with real processes over tcp.
func TestProcesses(t *testing.T) {
	for _, tc := range []struct {
		transport string
		n         int
	}{{"tcp", 2}, {"tcp", 3}, {"tcp", 5}, {"shm", 2}, {"shm", 4}, {"auto", 3}, {"auto", 7}} {
		t.Run(fmt.Sprintf("%s/n=%d", tc.transport, tc.n), func(t *testing.T) {
			procs := startJob(t, tc.n, "checks", jobenv.Transport+"="+tc.transport)
			codes := waitJob(t, procs, 120*time.Second)
			for r, code := range codes {
				require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			}
		})
	}
}

// waitFor polls a process's output for a line.
func waitFor(t *testing.T, p *proc, text string) {
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.out.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in output:\n%s", text, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKilledPeer: kill -9 of one rank makes the ranks waiting on it fail fast.
func TestKilledPeer(t *testing.T) {
	procs := startJob(t, 4, "wait-on-victim")
	for r, p := range procs {
		if r != 1 {
			waitFor(t, p, "waiting")
		}
	}
	waitFor(t, procs[1], "victim ready")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, procs[1].cmd.Process.Signal(syscall.SIGKILL))
	codes := waitJob(t, procs, 30*time.Second)
	for r, code := range codes {
		if r == 1 {
			continue
		}
		require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
		require.Contains(t, procs[r].out.String(), "closed by the peer")
	}
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestSilentPeer: a rank that stops answering (SIGSTOP: alive but silent, like a host whose
// link was cut) is declared lost after the configured peer timeout.
func TestSilentPeer(t *testing.T) {
	procs := startJob(t, 3, "wait-on-victim", jobenv.PeerTimeout+"=1500ms")
	for r, p := range procs {
		if r != 1 {
			waitFor(t, p, "waiting")
		}
	}
	waitFor(t, procs[1], "victim ready")
	start := time.Now()
	require.NoError(t, procs[1].cmd.Process.Signal(syscall.SIGSTOP))
	defer procs[1].cmd.Process.Signal(syscall.SIGKILL)
	for _, r := range []int{0, 2} {
		procs[r].cmd.Wait()
		require.Equal(t, 0, procs[r].cmd.ProcessState.ExitCode(), procs[r].out.String())
		require.Contains(t, procs[r].out.String(), "peer timeout")
	}
	elapsed := time.Since(start)
	require.Less(t, elapsed, 8*time.Second)
	require.Greater(t, elapsed, time.Second)
}
