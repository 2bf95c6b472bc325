package rma

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// The suite runs twice: as goroutine ranks (comm.Run) at every rank count 1-8, and in real
// processes: the test binary re-executes itself as the ranks of a job with the environment
// gorun gives them, over shm or tcp, or over fake hosts (GORUN_HOST_ID), where a window mixes
// direct access (same host) with messages (other hosts). A rank process runs every SPMD case
// written for its job's size, each on a fresh duplicate of the world communicator, and skips
// the others. (Adapted from topology's harness; test files cannot be shared between packages.)

const (
	rankModeVar   = "GORUN_RMA_TEST_RANK"
	procMatrixVar = "GORUN_RMA_PROC_MATRIX" // "full": every count 1-8 over shm and tcp (the CI step)
)

var (
	procWorld *comm.Comm
	procCases atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv(rankModeVar) == "" {
		os.Exit(m.Run())
	}
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		os.Exit(10)
	}
	procWorld = c
	if code := m.Run(); code != 0 {
		os.Exit(code)
	}
	fmt.Printf("rank %d ran %d cases\n", c.Rank(), procCases.Load())
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: finalize: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	os.Exit(0)
}

func inJob() bool { return procWorld != nil }

// spmd runs fn on p ranks: as goroutines, or in this process job when it has p ranks. A case
// that hangs fails the test after a minute instead of blocking the suite.
func spmd(t *testing.T, p int, fn func(c *comm.Comm) error) {
	t.Helper()
	if inJob() {
		if procWorld.Size() != p {
			return
		}
		c, err := procWorld.Dup()
		if err == nil {
			err = fn(c)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "rank %d of %d: %s: %v\n", procWorld.Rank(), p, t.Name(), err)
			os.Exit(1)
		}
		procCases.Add(1)
		return
	}
	done := make(chan error, 1)
	go func() { done <- comm.Run(p, fn) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%d ranks: %v", p, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%d ranks: no result within a minute (hang)", p)
	}
}

// notInJob skips a test that is not an SPMD case.
func notInJob(t *testing.T) {
	if inJob() {
		t.Skip("not an SPMD case")
	}
}

type jobConfig struct {
	transport string
	n         int
	hosts     []string
}

func (j jobConfig) String() string {
	s := fmt.Sprintf("%s/n=%d", j.transport, j.n)
	if j.hosts != nil {
		s += "/hosts=" + strings.Join(j.hosts, ",")
	}
	return s
}

func procMatrix() []jobConfig {
	if os.Getenv(procMatrixVar) == "full" {
		var jobs []jobConfig
		for n := 1; n <= 8; n++ {
			jobs = append(jobs, jobConfig{transport: "shm", n: n}, jobConfig{transport: "tcp", n: n})
		}
		return append(jobs,
			jobConfig{transport: "auto", n: 4, hosts: []string{"a", "b", "a", "b"}},
			jobConfig{transport: "auto", n: 6, hosts: []string{"a", "b", "a", "c", "b", "a"}},
			jobConfig{transport: "auto", n: 8, hosts: []string{"a", "b", "c", "d", "a", "b", "c", "d"}})
	}
	return []jobConfig{
		{transport: "shm", n: 3},
		{transport: "tcp", n: 4},
		{transport: "auto", n: 6, hosts: []string{"a", "b", "a", "c", "b", "a"}},
	}
}

// TestSuiteInProcesses runs the suite as processes, a job per configuration.
func TestSuiteInProcesses(t *testing.T) {
	if inJob() {
		t.Skip("already a rank")
	}
	if testing.Short() {
		t.Skip("-short: goroutine ranks only")
	}
	for _, job := range procMatrix() {
		t.Run(job.String(), func(t *testing.T) {
			outs, codes := runJob(t, job, 2*time.Minute)
			for try := 0; try < 2 && len(outs) > 0 && strings.Contains(outs[0], "address already in use"); try++ {
				t.Logf("rendezvous port taken by another process; running the job again")
				outs, codes = runJob(t, job, 2*time.Minute)
			}
			var failed []string
			for r, code := range codes {
				if code != 0 {
					failed = append(failed, fmt.Sprintf("rank %d exited %d:\n%s", r, code, outs[r]))
				}
			}
			if failed != nil {
				t.Fatal(strings.Join(failed, "\n"))
			}
			re := regexp.MustCompile(`rank \d+ ran (\d+) cases`)
			var first string
			for r, out := range outs {
				m := re.FindStringSubmatch(out)
				if m == nil || m[1] == "0" {
					t.Fatalf("rank %d ran no cases:\n%s", r, out)
				}
				if r == 0 {
					first = m[1]
				} else if m[1] != first {
					t.Fatalf("rank %d ran %s cases, rank 0 %s", r, m[1], first)
				}
			}
		})
	}
}

var jobSeq atomic.Int64

// runJob starts job.n copies of the test binary as the ranks of a job and waits for them,
// killing them after limit; it returns each rank's output and exit code.
func runJob(t *testing.T, job jobConfig, limit time.Duration) ([]string, []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	coord := ln.Addr().String()
	ln.Close()
	jobID := fmt.Sprintf("rmatest%d-%d", os.Getpid(), jobSeq.Add(1))
	cmds := make([]*exec.Cmd, job.n)
	outs := make([]bytes.Buffer, job.n)
	for r := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^Test", "-test.skip=^TestSuiteInProcesses$", "-test.count=1", "-test.timeout="+limit.String())
		cmd.Env = append(os.Environ(), rankModeVar+"=1",
			jobenv.Rank+"="+strconv.Itoa(r), jobenv.Size+"="+strconv.Itoa(job.n),
			jobenv.Coord+"="+coord, jobenv.JobID+"="+jobID, jobenv.Secret+"=c0ffee"+jobID,
			jobenv.Transport+"="+job.transport, jobenv.PeerTimeout+"=30s")
		if job.hosts != nil {
			cmd.Env = append(cmd.Env, jobenv.HostID+"="+job.hosts[r])
		}
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	codes := make([]int, job.n)
	done := make(chan struct{})
	go func() {
		for r, cmd := range cmds {
			cmd.Wait()
			codes[r] = cmd.ProcessState.ExitCode()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		for _, cmd := range cmds {
			cmd.Process.Signal(syscall.SIGQUIT)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			for _, cmd := range cmds {
				cmd.Process.Kill()
			}
			<-done
		}
		t.Errorf("job %s did not finish within %v (killed)", job, limit)
	}
	texts := make([]string, job.n)
	for r := range outs {
		texts[r] = outs[r].String()
	}
	return texts, codes
}
