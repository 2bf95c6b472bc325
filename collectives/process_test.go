package collectives

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/comm/jobenv"
	"github.com/gorun-hpc/gorun/internal/spmdtest"
)

// The correctness suite also runs across real processes (internal/spmdtest): one job of n
// processes runs every case written for n ranks, over connections set up once (a job per case
// would exhaust loopback ports in TIME_WAIT), and a job per rank count covers the suite.

// harness runs the suite in processes (internal/spmdtest). GORUN_COLL_PROC_MATRIX=full (the CI
// step) runs every rank count 1-8 over every transport; otherwise go test runs a representative
// subset. GORUN_COLL_PROC_RUN narrows the tests each rank runs (a -run pattern), e.g. to
// iterate on one collective.
var harness = &spmdtest.Harness{Name: "colltest", RankVar: "GORUN_COLL_TEST_RANK", Skip: suiteSkip,
	RunVar: "GORUN_COLL_PROC_RUN", Limit: 4 * time.Minute}

const procMatrixVar = "GORUN_COLL_PROC_MATRIX"

func TestMain(m *testing.M) { harness.Main(m) }

// inJob reports whether this binary runs as a rank of a multi-process job.
func inJob() bool { return harness.InJob() }

// runInJob runs one case on this rank if the job has p ranks.
func runInJob(t *testing.T, p int, fn func(c *comm.Comm) error) { harness.RunInJob(t, p, fn) }

// notInJob skips a test that needs every rank in one address space.
func notInJob(t *testing.T) { harness.NotInJob(t) }

// suiteSkip names the tests a rank process does not run: this one, those that are not SPMD
// cases (pure functions, or needing goroutine ranks), and the allocation count, which counts the
// whole process and so also the job's own transport (UC's timers allocate in the background).
const suiteSkip = "^(TestSuiteInProcesses|TestTuningFromEnv|TestAlgorithmSelection|TestOpApply|TestPeerGone|TestHostLayout|TestAllreduceSmallShmAllocs)$"

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
func procMatrix() []spmdtest.Job {
	if os.Getenv(procMatrixVar) == "full" {
		var jobs []spmdtest.Job
		for n := 1; n <= 8; n++ {
			jobs = append(jobs, spmdtest.Job{Transport: "shm", N: n}, spmdtest.Job{Transport: "tcp", N: n})
		}
		for _, n := range []int{2, 3, 5, 8} {
			jobs = append(jobs, softVerbs(n, "rc"), softVerbs(n, "uc"))
		}
		return append(jobs,
			spmdtest.Job{Transport: "auto", N: 4, Hosts: hostsOf(4, 2)},
			spmdtest.Job{Transport: "auto", N: 5, Hosts: hostsOf(5, 2)},
			spmdtest.Job{Transport: "auto", N: 7, Hosts: hostsOf(7, 3)},
			spmdtest.Job{Transport: "auto", N: 6, Hosts: []string{"a", "b", "a", "c", "b", "a"}})
	}
	if m := os.Getenv(procMatrixVar); strings.HasPrefix(m, "hosts=") { // one job, for debugging
		h := strings.Split(strings.TrimPrefix(m, "hosts="), ",")
		return []spmdtest.Job{{Transport: "auto", N: len(h), Hosts: h}}
	}
	var n int
	var qp string
	if m := os.Getenv(procMatrixVar); strings.HasPrefix(m, "verbs=") { // verbs=N,rc|uc: one job, for debugging
		if _, err := fmt.Sscanf(strings.Replace(strings.TrimPrefix(m, "verbs="), ",", " ", 1), "%d %s", &n, &qp); err == nil {
			return []spmdtest.Job{softVerbs(n, qp)}
		}
	}
	return []spmdtest.Job{
		{Transport: "shm", N: 3},
		{Transport: "shm", N: 6},
		{Transport: "tcp", N: 4},
		{Transport: "tcp", N: 7},
		{Transport: "auto", N: 5, Hosts: []string{"a", "b", "a", "c", "b"}}, // by node, and a lone rank
		softVerbs(3, "rc"),
		softVerbs(4, "uc"),
	}
}

// softVerbs is a job over comm's verbs transport on its software device (queue pairs emulated
// over shared memory), with reliable (rc) or unreliable (uc) connections.
func softVerbs(n int, qp string) spmdtest.Job {
	return spmdtest.Job{Transport: "verbs", N: n, Env: []string{jobenv.RDMADevice + "=softibv", jobenv.VerbsQP + "=" + qp}}
}

// TestSuiteInProcesses runs the suite in multi-process jobs.
func TestSuiteInProcesses(t *testing.T) { harness.RunSuite(t, procMatrix()) }
