package rma

import (
	"os"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/spmdtest"
)

// The suite runs as goroutine ranks at every rank count 1-8 and in real processes
// (internal/spmdtest), over shm, tcp, or fake hosts where a window mixes direct access (same host) with messages (other hosts).
// GORUN_RMA_PROC_MATRIX=full (the CI step) runs every count 1-8 over shm and tcp.
var harness = &spmdtest.Harness{Name: "rmatest", RankVar: "GORUN_RMA_TEST_RANK", Skip: "^TestSuiteInProcesses$"}

func TestMain(m *testing.M) { harness.Main(m) }

func inJob() bool { return harness.InJob() }

// spmd runs fn on p ranks: as goroutines, or in this process job when it has p ranks.
func spmd(t *testing.T, p int, fn func(c *comm.Comm) error) {
	t.Helper()
	harness.SPMD(t, p, fn)
}

// notInJob skips a test that is not an SPMD case.
func notInJob(t *testing.T) { harness.NotInJob(t) }

// TestSuiteInProcesses runs the suite as processes, a job per configuration.
func TestSuiteInProcesses(t *testing.T) {
	harness.RunSuite(t, spmdtest.Matrix(os.Getenv("GORUN_RMA_PROC_MATRIX") == "full"))
}
