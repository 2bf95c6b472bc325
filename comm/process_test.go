package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
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
	case "stress":
		return stress(c)
	case "idle-wait":
		// Rank 1 waits two seconds in Recv for rank 0's message and reports the CPU time its
		// process used meanwhile: waiting must not burn a core.
		if c.Rank() == 0 {
			time.Sleep(2 * time.Second)
			err := Send(c, []byte{1}, 1, 0)
			c.Finalize()
			return boolExit(err == nil)
		}
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		start := time.Now()
		_, err := Recv(c, make([]byte, 1), 0, 0)
		wall := time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
		fmt.Printf("waited %v, cpu %v (%.1f%% of a core)\n", wall.Round(time.Millisecond), cpu.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())
		c.Finalize()
		return boolExit(err == nil && cpu < wall/4)
	case "patient-wait":
		// Rank 1 waits patiently (Comm.Patient) a second each for a small and a large message
		// and reports its process's voluntary context switches meanwhile: a patient wait
		// sleeps until the message comes instead of looking every millisecond.
		big := make([]byte, 1<<20)
		if c.Rank() == 0 {
			for i := range big {
				big[i] = byte(i * 7)
			}
			time.Sleep(time.Second)
			err := Send(c, []byte("8 bytes!"), 1, 0)
			if err == nil {
				time.Sleep(time.Second)
				err = Send(c, big, 1, 1)
			}
			c.Finalize()
			return boolExit(err == nil)
		}
		pc := c.Patient()
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		start := time.Now()
		small := make([]byte, 8)
		_, err := Recv(pc, small, 0, 0)
		if err == nil {
			_, err = Recv(pc, big, 0, 1)
		}
		wall := time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		ok := err == nil && string(small) == "8 bytes!"
		for i := range big {
			ok = ok && big[i] == byte(i*7)
		}
		switches := after.Nvcsw - before.Nvcsw
		fmt.Printf("waited %v, %d voluntary context switches, err %v, data ok %v\n", wall.Round(time.Millisecond), switches, err, ok)
		c.Finalize()
		// Measured on a 2-core VM: ~330; with naps of up to a millisecond instead, ~5500.
		return boolExit(ok && switches < 1000)
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

// stress: each rank sends 25000 messages (random destination, tag and size up to 200 KiB, so
// both eager and single-copy paths) and receives whatever is addressed to it from AnySource
// with AnyTag, checking each message's checksum, sequence and count per sender.
func stress(c *Comm) int {
	const perRank = 25000
	n, me := c.Size(), c.Rank()
	rng := rand.New(rand.NewPCG(uint64(me), 99))
	dests := make([]int, perRank)
	counts := make([]int64, n)
	for i := range dests {
		dests[i] = rng.IntN(n)
		counts[dests[i]]++
	}
	// Every rank learns how many messages to expect from each other rank.
	expect := make([]int64, n)
	for r := 0; r < n; r++ {
		if _, err := Sendrecv(c, counts[(me+r)%n:(me+r)%n+1], (me+r)%n, 1, expect[(me+n-r)%n:(me+n-r)%n+1], (me+n-r)%n, 1); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	var total int64
	for _, e := range expect {
		total += e
	}
	errc := make(chan error, 1)
	go func() {
		next := make([]uint32, n)
		buf := make([]byte, 200<<10+8)
		for i := int64(0); i < total; i++ {
			st, err := Recv(c, buf, AnySource, AnyTag)
			if err != nil {
				errc <- err
				return
			}
			b := buf[:st.Count]
			seq := binary.LittleEndian.Uint32(b)
			sum := binary.LittleEndian.Uint32(b[4:])
			if seq != next[st.Source] || crc32.ChecksumIEEE(b[8:]) != sum || int(seq%1000) != st.Tag {
				errc <- fmt.Errorf("message %d from %d (tag %d, %d bytes) corrupt or out of order", seq, st.Source, st.Tag, st.Count)
				return
			}
			next[st.Source]++
		}
		errc <- nil
	}()
	seqs := make([]uint32, n)
	for _, d := range dests {
		size := 8 + rng.IntN(64)
		if rng.IntN(8) == 0 {
			size = 8 + rng.IntN(200<<10)
		}
		b := make([]byte, size)
		fill(b[8:], rng.IntN(1<<30))
		binary.LittleEndian.PutUint32(b, seqs[d])
		binary.LittleEndian.PutUint32(b[4:], crc32.ChecksumIEEE(b[8:]))
		if err := Send(c, b, d, int(seqs[d]%1000)); err != nil {
			fmt.Println("send:", err)
			return 1
		}
		seqs[d]++
	}
	if err := <-errc; err != nil {
		fmt.Println("recv:", err)
		return 1
	}
	if err := c.Finalize(); err != nil {
		fmt.Println("finalize:", err)
		return 1
	}
	if me == 0 {
		fmt.Println("stress ok")
	}
	return 0
}

func boolExit(ok bool) int {
	if ok {
		return 0
	}
	return 1
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
	out lockedBuffer
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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

// startVictimJob starts n ranks in the "wait-on-victim" role and returns once rank 1 (the
// victim) and every other rank, each waiting on it, say they are ready.
func startVictimJob(t *testing.T, n int, env ...string) []*proc {
	t.Helper()
	procs := startJob(t, n, "wait-on-victim", env...)
	for r, p := range procs {
		if r != 1 {
			waitFor(t, p, "waiting")
		}
	}
	waitFor(t, procs[1], "victim ready")
	return procs
}

// TestKilledPeer: kill -9 of one rank makes the ranks waiting on it fail fast.
func TestKilledPeer(t *testing.T) {
	procs := startVictimJob(t, 4)
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
	procs := startVictimJob(t, 3, jobenv.PeerTimeout+"=1500ms")
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

// TestShmStress: 10^5 messages of random sizes, tags and sources among 4 processes over shared
// memory, every byte verified by checksum.
func TestShmStress(t *testing.T) {
	procs := startJob(t, 4, "stress", jobenv.Transport+"=shm")
	codes := waitJob(t, procs, 180*time.Second)
	for r, code := range codes {
		require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
	}
	require.Contains(t, procs[0].out.String(), "stress ok")
	requireNoSegments(t)
}

// requireNoSegments: no shared-memory segment of any test job is left behind.
func requireNoSegments(t *testing.T) {
	entries, _ := os.ReadDir(jobenv.SegmentDir())
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), jobenv.SegmentPrefix("testjob")), "leftover %s", e.Name())
	}
}

// TestShmNoLeftovers: segments are unlinked as soon as every rank has mapped them, so neither a
// normal exit nor a kill -9 leaves anything in /dev/shm.
func TestShmNoLeftovers(t *testing.T) {
	procs := startVictimJob(t, 3, jobenv.Transport+"=shm")
	requireNoSegments(t) // running, but already unlinked
	require.NoError(t, procs[1].cmd.Process.Signal(syscall.SIGKILL))
	waitJob(t, procs, 30*time.Second)
	requireNoSegments(t)
}

// TestPatientWaitSleeps: a patient wait over shared memory sleeps on the doorbell until the
// message comes (small and large), rather than waking every millisecond to look.
func TestPatientWaitSleeps(t *testing.T) {
	procs := startJob(t, 2, "patient-wait", jobenv.Transport+"=shm")
	codes := waitJob(t, procs, 60*time.Second)
	t.Logf("%s", strings.TrimSpace(procs[1].out.String()))
	require.Equal(t, 0, codes[0], procs[0].out.String())
	require.Equal(t, 0, codes[1], procs[1].out.String())
}

// TestWaitingRankIdles: a rank blocked in Recv for two seconds uses a small fraction of a core
// (it spins briefly, then sleeps on the futex / socket), over both transports.
func TestWaitingRankIdles(t *testing.T) {
	for _, transport := range []string{"tcp", "shm"} {
		t.Run(transport, func(t *testing.T) {
			procs := startJob(t, 2, "idle-wait", jobenv.Transport+"="+transport)
			codes := waitJob(t, procs, 60*time.Second)
			t.Logf("%s: %s", transport, strings.TrimSpace(procs[1].out.String()))
			require.Equal(t, 0, codes[0], procs[0].out.String())
			require.Equal(t, 0, codes[1], procs[1].out.String())
		})
	}
}
