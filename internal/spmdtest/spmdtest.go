// Package spmdtest runs a package's SPMD test cases twice: as goroutine ranks (comm.Run) and
// in real processes, the test binary re-executing itself as the ranks of a job with the
// environment gorun gives them (comm/jobenv), over shm, tcp, verbs or fake hosts
// (GORUN_HOST_ID). A rank process runs every case written for its job's size, each on a fresh
// duplicate of the world communicator, and skips the others; so one job of n processes runs
// every n-rank case over connections set up once, and a job per rank count covers the suite.
package spmdtest

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

// Harness is one package's suite. Set its fields in a package variable; TestMain calls Main.
type Harness struct {
	Name    string        // job ID prefix, e.g. "colltest"
	RankVar string        // set in a re-executed binary: it is a rank of a job
	Skip    string        // -test.skip for the ranks: the suite's own test and the non-SPMD ones
	RunVar  string        // optional: a -run pattern narrowing what each rank runs
	Limit   time.Duration // per job (0: 2 minutes)

	world *comm.Comm
	cases atomic.Int64
	seq   atomic.Int64
}

// Main is TestMain: a plain run, or one rank of a job, which reports how many cases it ran.
func (h *Harness) Main(m *testing.M) {
	if os.Getenv(h.RankVar) == "" {
		os.Exit(m.Run())
	}
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		os.Exit(10)
	}
	h.world = c
	if code := m.Run(); code != 0 {
		os.Exit(code)
	}
	fmt.Printf("rank %d ran %d cases\n", c.Rank(), h.cases.Load())
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: finalize: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// InJob reports whether this binary runs as a rank of a multi-process job.
func (h *Harness) InJob() bool { return h.world != nil }

// RunInJob runs one case on this rank if the job has p ranks. A failing rank exits at once, so
// its peers fail too (within the peer timeout) rather than meeting it in the next case.
func (h *Harness) RunInJob(t *testing.T, p int, fn func(c *comm.Comm) error) {
	if h.world.Size() != p {
		return
	}
	c, err := h.world.Dup() // a message space per case: a failed case leaves nothing behind
	if err == nil {
		err = fn(c)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d of %d: %s: %v\n", h.world.Rank(), p, t.Name(), err)
		os.Exit(1)
	}
	h.cases.Add(1)
}

// SPMD runs fn on p ranks: in this job when it has p ranks, else as goroutines, where a case
// that hangs fails the test after a minute instead of blocking the suite.
func (h *Harness) SPMD(t *testing.T, p int, fn func(c *comm.Comm) error) {
	t.Helper()
	if h.InJob() {
		h.RunInJob(t, p, fn)
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

// NotInJob skips, in a rank process, a test that is not an SPMD case.
func (h *Harness) NotInJob(t *testing.T) {
	if h.InJob() {
		t.Skip("not an SPMD case")
	}
}

// Job is one multi-process run of the suite.
type Job struct {
	Transport string   // GORUN_TRANSPORT: tcp, shm, verbs or auto
	N         int      // ranks
	Hosts     []string // GORUN_HOST_ID per rank (nil: the machine's own)
	Env       []string // extra environment (e.g. a forced algorithm)
}

func (j Job) String() string {
	s := fmt.Sprintf("%s/n=%d", j.Transport, j.N)
	if j.Hosts != nil {
		s += "/hosts=" + strings.Join(j.Hosts, ",")
	}
	for _, e := range j.Env {
		s += "/" + e
	}
	return s
}

// Matrix is the common set of jobs: with full (the CI steps), every count 1-8 over shm and
// tcp and three mixes of fake hosts; otherwise a subset covering both transports and hosts.
func Matrix(full bool) []Job {
	if full {
		var jobs []Job
		for n := 1; n <= 8; n++ {
			jobs = append(jobs, Job{Transport: "shm", N: n}, Job{Transport: "tcp", N: n})
		}
		return append(jobs,
			Job{Transport: "auto", N: 4, Hosts: []string{"a", "b", "a", "b"}},
			Job{Transport: "auto", N: 6, Hosts: []string{"a", "b", "a", "c", "b", "a"}},
			Job{Transport: "auto", N: 8, Hosts: []string{"a", "b", "c", "d", "a", "b", "c", "d"}})
	}
	return []Job{
		{Transport: "shm", N: 3},
		{Transport: "tcp", N: 4},
		{Transport: "auto", N: 6, Hosts: []string{"a", "b", "a", "c", "b", "a"}},
	}
}

// RunSuite runs the package's tests in one multi-process job per entry of jobs and checks
// that every rank exited 0 having run the same, non-zero number of cases.
func (h *Harness) RunSuite(t *testing.T, jobs []Job) {
	if h.InJob() {
		t.Skip("already a rank")
	}
	if testing.Short() {
		t.Skip("-short: goroutine ranks only")
	}
	pattern, narrowed := "", false
	if h.RunVar != "" {
		pattern = os.Getenv(h.RunVar)
		narrowed = pattern != ""
	}
	if pattern == "" {
		pattern = "^Test"
	}
	limit := h.Limit
	if limit == 0 {
		limit = 2 * time.Minute
	}
	for _, job := range jobs {
		t.Run(job.String(), func(t *testing.T) {
			start := time.Now()
			outs, codes := h.runJob(t, job, pattern, limit)
			// The coordinator port is picked free and then bound by rank 0: on a busy machine
			// another process can take it in between. That is the harness's race, not a result.
			for try := 0; try < 2 && lostPort(outs); try++ {
				t.Logf("rendezvous port taken by another process; running the job again")
				outs, codes = h.runJob(t, job, pattern, limit)
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
			var counts []string
			for r, out := range outs {
				m := re.FindStringSubmatch(out)
				if m == nil || (m[1] == "0" && !narrowed) {
					t.Fatalf("rank %d ran no cases:\n%s", r, out)
				}
				counts = append(counts, m[1])
			}
			for _, c := range counts {
				if c != counts[0] {
					t.Fatalf("ranks ran different numbers of cases: %v", counts)
				}
			}
			t.Logf("%s: %s cases per rank in %v", job, counts[0], time.Since(start).Round(time.Millisecond))
		})
	}
}

// lostPort reports whether rank 0 could not bind the rendezvous port it was given.
func lostPort(outs []string) bool {
	return len(outs) > 0 && strings.Contains(outs[0], "address already in use")
}

// runJob starts job.N copies of the test binary as ranks and waits for them, killing them after
// limit. It returns each rank's output and exit code.
func (h *Harness) runJob(t *testing.T, job Job, pattern string, limit time.Duration) ([]string, []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	coord := ln.Addr().String()
	ln.Close()
	jobID := fmt.Sprintf("%s%d-%d", h.Name, os.Getpid(), h.seq.Add(1))
	cmds := make([]*exec.Cmd, job.N)
	outs := make([]bytes.Buffer, job.N) // read only after the rank exits; exec serializes writes to one writer
	for r := range cmds {
		args := []string{"-test.v", "-test.run=" + pattern, "-test.skip=" + h.Skip, "-test.count=1", "-test.timeout=" + limit.String()}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), h.RankVar+"=1",
			jobenv.Rank+"="+strconv.Itoa(r), jobenv.Size+"="+strconv.Itoa(job.N),
			jobenv.Coord+"="+coord, jobenv.JobID+"="+jobID, jobenv.Secret+"=c0ffee"+jobID,
			jobenv.Transport+"="+job.Transport, jobenv.PeerTimeout+"=30s")
		if job.Hosts != nil {
			cmd.Env = append(cmd.Env, jobenv.HostID+"="+job.Hosts[r])
		}
		cmd.Env = append(cmd.Env, job.Env...)
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	codes := make([]int, job.N)
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
		// SIGQUIT first: each rank's goroutine dump shows where it waits.
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
	texts := make([]string, job.N)
	for r := range outs {
		texts[r] = outs[r].String()
	}
	return texts, codes
}
