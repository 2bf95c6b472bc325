// Package spmdtest runs an example program under gorun in its tests: the example's test binary
// plays both gorun (launcher.Main) and every rank (the example's own main), so a test runs the
// real program as processes over the real transports without building anything.
package spmdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/launcher"
)

// roleVar tells a re-executed test binary which part it plays: "gorun" or "rank".
const roleVar = "GORUN_EXAMPLE_TEST_ROLE"

// MatrixVar set to "full" makes Jobs return every rank count 1-4 over both shm and tcp (the CI
// step); otherwise each count runs once, the transports alternating.
const MatrixVar = "GORUN_EXAMPLES_MATRIX"

// Main is an example's TestMain: as a rank it runs prog (the example's main) and exits 0 when
// prog returns; as gorun it runs the launcher; otherwise it runs the tests.
func Main(m *testing.M, prog func()) {
	switch os.Getenv(roleVar) {
	case "rank":
		prog()
		os.Exit(0)
	case "gorun":
		os.Exit(launcher.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Job is one run of an example: N ranks over Transport (shm or tcp).
type Job struct {
	N         int
	Transport string
}

func (j Job) String() string { return fmt.Sprintf("%s/n=%d", j.Transport, j.N) }

// Jobs returns the runs an example's test makes.
func Jobs() []Job {
	if os.Getenv(MatrixVar) == "full" {
		var jobs []Job
		for n := 1; n <= 4; n++ {
			jobs = append(jobs, Job{n, "shm"}, Job{n, "tcp"})
		}
		return jobs
	}
	return []Job{{1, "shm"}, {2, "tcp"}, {3, "shm"}, {4, "tcp"}}
}

// Run runs the example under gorun as job.N ranks with args and returns its standard output.
// The test fails unless the job exits 0 within a minute.
func Run(t *testing.T, job Job, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the example as processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gargs := []string{"-n", strconv.Itoa(job.N), "--transport", job.Transport, "--peer-timeout", "30s", "-x", roleVar + "=rank", self}
	cmd := exec.CommandContext(ctx, self, append(gargs, args...)...)
	cmd.Env = append(os.Environ(), roleVar+"=gorun")
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: gorun %q did not finish within a minute\nstdout:\n%s\nstderr:\n%s", job, args, out.String(), errb.String())
	}
	if err != nil {
		t.Fatalf("%s: gorun %q: %v\nstdout:\n%s\nstderr:\n%s", job, args, err, out.String(), errb.String())
	}
	return out.String()
}

// ReadMatrix reads a matrix as the examples write it with --out: a line "m n", then m rows of
// n values; element (i, j) is a[i*n+j].
func ReadMatrix(path string) (m, n int, a []float64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, nil, err
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, 0, nil, fmt.Errorf("%s: no header", path)
	}
	if m, err = strconv.Atoi(fields[0]); err != nil {
		return 0, 0, nil, fmt.Errorf("%s: rows: %w", path, err)
	}
	if n, err = strconv.Atoi(fields[1]); err != nil {
		return 0, 0, nil, fmt.Errorf("%s: columns: %w", path, err)
	}
	if m < 0 || n < 0 || len(fields)-2 != m*n {
		return 0, 0, nil, fmt.Errorf("%s: %d values for a %d x %d matrix", path, len(fields)-2, m, n)
	}
	a = make([]float64, m*n)
	for i := range a {
		if a[i], err = strconv.ParseFloat(fields[2+i], 64); err != nil {
			return 0, 0, nil, fmt.Errorf("%s: value %d: %w", path, i, err)
		}
	}
	return m, n, a, nil
}
