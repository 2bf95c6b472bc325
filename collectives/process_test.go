package collectives

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

// The correctness suite across real processes: the test binary re-executes itself as the ranks
// of a job, with the environment gorun's launcher gives them (comm/jobenv), over the tcp or shm
// transport or over fake hosts (GORUN_HOST_ID) so that a job mixes both. Each rank process runs
// the same tests in the same order; run(t, p, fn) then executes fn on a fresh duplicate of the
// job's world communicator when p is the job's size and skips the case otherwise. So one job of
// n processes runs every case written for n ranks, over connections set up once (a job per case
// would exhaust loopback ports in TIME_WAIT), and a job per rank count covers the suite.

// rankModeVar marks a re-executed test binary as one rank of a job.
const rankModeVar = "GORUN_COLL_TEST_RANK"

// procMatrixVar set to "full" runs every rank count 1-8 over every transport (the CI step);
// otherwise go test runs a representative subset.
const procMatrixVar = "GORUN_COLL_PROC_MATRIX"

var (
	procWorld *comm.Comm   // the job's world communicator when this binary runs as a rank
	procCases atomic.Int64 // cases this rank ran
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

// inJob reports whether this binary runs as a rank of a multi-process job.
func inJob() bool { return procWorld != nil }

// runInJob runs one case on this rank if the job has p ranks. A failing rank exits at once, so
// its peers fail too (within the peer timeout) rather than meeting it in the next case.
func runInJob(t *testing.T, p int, fn func(c *comm.Comm) error) {
	if procWorld.Size() != p {
		return
	}
	c, err := procWorld.Dup() // a message space per case: a failed case leaves nothing behind
	if err == nil {
		err = fn(c)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d of %d: %s: %v\n", procWorld.Rank(), p, t.Name(), err)
		os.Exit(1)
	}
	procCases.Add(1)
}

// notInJob skips a test that needs every rank in one address space.
func notInJob(t *testing.T) {
	if inJob() {
		t.Skip("needs goroutine ranks")
	}
}

// jobConfig is one multi-process run of the suite.
type jobConfig struct {
	transport string   // GORUN_TRANSPORT: tcp, shm or auto
	n         int      // ranks
	hosts     []string // GORUN_HOST_ID per rank (nil: the machine's own)
	env       []string // extra environment (e.g. a forced algorithm)
}

func (j jobConfig) String() string {
	s := fmt.Sprintf("%s/n=%d", j.transport, j.n)
	if j.hosts != nil {
		s += "/hosts=" + strings.Join(j.hosts, ",")
	}
	for _, e := range j.env {
		s += "/" + e
	}
	return s
}

// suiteSkip names the tests a rank process does not run: this one, and those that are not SPMD
// cases (pure functions, or needing goroutine ranks).
const suiteSkip = "^(TestSuiteInProcesses|TestTuningFromEnv|TestAlgorithmSelection|TestOpApply|TestPeerGone|TestHostLayout)$"

// hostsOf gives n ranks h fake hosts, consecutive ranks sharing one (as gorun maps by slot).
func hostsOf(n, h int) []string {
	ids := make([]string, n)
	for r := range ids {
		ids[r] = fmt.Sprintf("fakehost%d", r*h/n)
	}
	return ids
}

// procMatrix is the set of jobs to run. go test (the whole repository within ~15 minutes on two
// cores) runs a subset that still covers every transport (shm, tcp, software verbs in RC and UC
// mode), odd and even counts and a job over three fake hosts (shm inside, tcp between); the CI
// step sets GORUN_COLL_PROC_MATRIX=full for every count 1-8 over shm and tcp, and more over verbs.
func procMatrix() []jobConfig {
	if os.Getenv(procMatrixVar) == "full" {
		var jobs []jobConfig
		for n := 1; n <= 8; n++ {
			jobs = append(jobs, jobConfig{transport: "shm", n: n}, jobConfig{transport: "tcp", n: n})
		}
		for _, n := range []int{2, 3, 5, 8} {
			jobs = append(jobs, softVerbs(n, "rc"), softVerbs(n, "uc"))
		}
		return append(jobs,
			jobConfig{transport: "auto", n: 4, hosts: hostsOf(4, 2)},
			jobConfig{transport: "auto", n: 5, hosts: hostsOf(5, 2)},
			jobConfig{transport: "auto", n: 7, hosts: hostsOf(7, 3)},
			jobConfig{transport: "auto", n: 6, hosts: []string{"a", "b", "a", "c", "b", "a"}})
	}
	if m := os.Getenv(procMatrixVar); strings.HasPrefix(m, "hosts=") { // one job, for debugging
		h := strings.Split(strings.TrimPrefix(m, "hosts="), ",")
		return []jobConfig{{transport: "auto", n: len(h), hosts: h}}
	}
	return []jobConfig{
		{transport: "shm", n: 3},
		{transport: "shm", n: 6},
		{transport: "tcp", n: 4},
		{transport: "tcp", n: 7},
		{transport: "auto", n: 5, hosts: []string{"a", "b", "a", "c", "b"}}, // by node, and a lone rank
		softVerbs(3, "rc"),
		softVerbs(4, "uc"),
	}
}

// softVerbs is a job over comm's verbs transport on its software device (queue pairs emulated
// over shared memory), with reliable (rc) or unreliable (uc) connections.
func softVerbs(n int, qp string) jobConfig {
	return jobConfig{transport: "verbs", n: n, env: []string{jobenv.RDMADevice + "=softibv", jobenv.VerbsQP + "=" + qp}}
}

// TestSuiteInProcesses runs the suite in multi-process jobs. GORUN_COLL_PROC_RUN narrows the
// tests each rank runs (a -run pattern), e.g. to iterate on one collective.
func TestSuiteInProcesses(t *testing.T) {
	if inJob() {
		t.Skip("already a rank")
	}
	if testing.Short() {
		t.Skip("-short: goroutine ranks only")
	}
	pattern, narrowed := os.Getenv("GORUN_COLL_PROC_RUN"), true
	if pattern == "" {
		pattern, narrowed = "^Test", false
	}
	for _, job := range procMatrix() {
		t.Run(job.String(), func(t *testing.T) {
			start := time.Now()
			outs, codes := runJob(t, job, pattern, 4*time.Minute)
			// The coordinator port is picked free and then bound by rank 0: on a busy machine
			// another process can take it in between. That is the harness's race, not a result.
			for try := 0; try < 2 && lostPort(outs); try++ {
				t.Logf("rendezvous port taken by another process; running the job again")
				outs, codes = runJob(t, job, pattern, 4*time.Minute)
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
			// Every rank ran the same, non-zero number of cases.
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
	return len(outs) > 0 && strings.Contains(outs[0], "rendezvous listener") && strings.Contains(outs[0], "address already in use")
}

var jobSeq atomic.Int64

// runJob starts job.n copies of the test binary as ranks and waits for them, killing them after
// limit. It returns each rank's output and exit code.
func runJob(t *testing.T, job jobConfig, pattern string, limit time.Duration) ([]string, []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	coord := ln.Addr().String()
	ln.Close()
	jobID := fmt.Sprintf("colltest%d-%d", os.Getpid(), jobSeq.Add(1))
	cmds := make([]*exec.Cmd, job.n)
	outs := make([]bytes.Buffer, job.n) // read only after the rank exits; exec serializes writes to one writer
	for r := range cmds {
		args := []string{"-test.v", "-test.run=" + pattern, "-test.skip=" + suiteSkip, "-test.count=1", "-test.timeout=" + limit.String()}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), rankModeVar+"=1",
			jobenv.Rank+"="+strconv.Itoa(r), jobenv.Size+"="+strconv.Itoa(job.n),
			jobenv.Coord+"="+coord, jobenv.JobID+"="+jobID, jobenv.Secret+"=c0ffee"+jobID,
			jobenv.Transport+"="+job.transport, jobenv.PeerTimeout+"=30s")
		if job.hosts != nil {
			cmd.Env = append(cmd.Env, jobenv.HostID+"="+job.hosts[r])
		}
		cmd.Env = append(cmd.Env, job.env...)
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
	texts := make([]string, job.n)
	for r := range outs {
		texts[r] = outs[r].String()
	}
	return texts, codes
}
