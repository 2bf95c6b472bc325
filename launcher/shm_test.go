package launcher

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// gorunSegments lists the shared-memory segments of gorun jobs present now.
func gorunSegments(t *testing.T) map[string]bool {
	entries, err := os.ReadDir(jobenv.SegmentDir())
	require.NoError(t, err)
	out := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "gorun-") {
			out[e.Name()] = true
		}
	}
	return out
}

// newSegments are those in now that were not in before. The software RDMA device's files
// (gorun-softibv-*) are not job segments: other packages' tests create them meanwhile.
func newSegments(before, now map[string]bool) []string {
	var out []string
	for name := range now {
		if !before[name] && !strings.HasPrefix(name, softDevicePrefix) {
			out = append(out, name)
		}
	}
	return out
}

// softDevicePrefix names the software RDMA device's files (comm/internal/ibv.SoftFilePrefix).
const softDevicePrefix = "gorun-softibv-"

// requireNoNewSegments fails if a segment that was not there before outlives the job. Other
// packages' tests run shared-memory jobs at the same time, whose segments exist for the few
// milliseconds until their ranks have mapped them: a new name must persist for a while to count.
func requireNoNewSegments(t *testing.T, before map[string]bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := newSegments(before, gorunSegments(t))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			require.Empty(t, left, what)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSharedMemoryJobs runs comm programs over the shared-memory transport and checks that no
// segment outlives the job: after a normal run, and after Ctrl-C of gorun.
func TestSharedMemoryJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs comm programs")
	}
	before := gorunSegments(t)

	res := runGorun(t, nil, "-n", "4", "--transport", "shm", "../examples/ring", "--laps", "2")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "ring of 4 ranks: 2 laps, token 14: correct")
	requireNoNewSegments(t, before, "after a normal run")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := gorunCmd(t, ctx, "-n", "3", "--transport", "shm", "./testdata/commwait")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for ready := 0; ready < 3 && sc.Scan(); {
		if strings.HasSuffix(sc.Text(), ": ready") {
			ready++
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 130, ee.ExitCode())
	requireNoNewSegments(t, before, "after Ctrl-C")
}

// TestLeftoverSegmentsRemoved: what a rank killed during the shared-memory set-up leaves behind
// is removed when the job ends.
func TestLeftoverSegmentsRemoved(t *testing.T) {
	dir := jobenv.SegmentDir()
	path := filepath.Join(dir, jobenv.SegmentPrefix("0123abcd")+"2")
	require.NoError(t, os.WriteFile(path, []byte("leftover"), 0o600))
	other := filepath.Join(dir, jobenv.SegmentPrefix("ffffffff")+"0")
	require.NoError(t, os.WriteFile(other, []byte("another job"), 0o600))
	defer os.Remove(other)
	removeSegments("0123abcd")
	_, err := os.Stat(path)
	require.True(t, os.IsNotExist(err), "segment of the job still there")
	_, err = os.Stat(other)
	require.NoError(t, err, "another job's segment was removed")
}
