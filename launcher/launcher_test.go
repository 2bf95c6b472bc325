package launcher

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

func TestAllRanksSucceed(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		res := runGorun(t, nil, rankArgs(t, []string{"-n", strconv.Itoa(n)}, "exit", "0")...)
		assert.Equal(t, 0, res.code, "n=%d stderr: %s", n, res.stderr)
		assert.Empty(t, res.stderr)
	}
}

func TestRankExitCodePropagates(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "4"}, "fail", "1", "3")...)
	assert.Equal(t, 3, res.code, "stderr: %s", res.stderr)
	assert.Regexp(t, `gorun: rank 1 \(pid \d+\) exited with code 3; terminating 3 other ranks`, res.stderr)
	// Every other rank got SIGTERM (and reported it) rather than being left running.
	for _, r := range []int{0, 2, 3} {
		assert.Contains(t, res.stdout, fmt.Sprintf("rank %d: SIGTERM\n", r))
	}
	// gorun's verdict comes after the failing rank's last output.
	assert.Contains(t, res.stdout, "rank 1: failing\n")
}

// When a rank's death makes its peers fail too, gorun blames the rank that exited first.
func TestFirstFailureIsBlamed(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "4"}, "cascade", "2")...)
	assert.Equal(t, 9, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
	// The peers that failed in its wake may be listed after it, never before.
	assert.Regexp(t, `^gorun: rank 2 \(pid \d+\) exited with code 9(; terminating \d other ranks?)?\n`+
		`(gorun: also failed \(after rank 2\): rank [013] \(pid \d+\) exited with code 1(, rank [013] \(pid \d+\) exited with code 1)*\n)?$`, res.stderr)
}

func TestEveryRankExitingNonZero(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "1"}, "exit", "7")...)
	assert.Equal(t, 7, res.code)
	assert.Regexp(t, `^gorun: rank 0 \(pid \d+\) exited with code 7\n$`, res.stderr)
}

func TestKilledRankTearsDownJob(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "4"}, "selfkill", "2")...)
	assert.Equal(t, 128+9, res.code, "stderr: %s", res.stderr)
	assert.Regexp(t, `gorun: rank 2 \(pid \d+\) was killed by signal 9 \(killed\); terminating 3 other ranks`, res.stderr)
	for _, r := range []int{0, 1, 3} {
		assert.Contains(t, res.stdout, fmt.Sprintf("rank %d: SIGTERM\n", r))
	}
}

// startJob starts gorun with waiting ranks and returns it once all n ranks printed "ready",
// with their pids.
func startJob(t *testing.T, n int, flags []string, behaviour string) (*exec.Cmd, *bufio.Scanner, []int, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := gorunCmd(t, ctx, rankArgs(t, append([]string{"-n", strconv.Itoa(n)}, flags...), behaviour)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &strings.Builder{}
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	pids := map[int]int{}
	for len(pids) < n && sc.Scan() {
		var r, pid int
		if _, err := fmt.Sscanf(sc.Text(), "ready %d %d", &r, &pid); err == nil {
			pids[r] = pid
		}
	}
	require.Len(t, pids, n, "ranks did not all start; stderr: %s", cmd.Stderr)
	var list []int
	for _, p := range pids {
		list = append(list, p)
	}
	return cmd, sc, list, cancel
}

func TestInterruptTerminatesEveryRank(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, sc, pids, cancel := startJob(t, 3, nil, "wait-term")
		require.NoError(t, cmd.Process.Signal(sig))
		var rest []string
		for sc.Scan() {
			rest = append(rest, sc.Text())
		}
		err := cmd.Wait()
		cancel()
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "gorun exited 0 after %v", sig)
		assert.Equal(t, 128+int(sig), ee.ExitCode())
		assert.ElementsMatch(t, []string{"rank 0: SIGTERM", "rank 1: SIGTERM", "rank 2: SIGTERM"}, rest)
		assert.Contains(t, cmd.Stderr.(*strings.Builder).String(), fmt.Sprintf("gorun: received %v; terminating 3 ranks", sig))
		for _, p := range pids {
			assert.True(t, processGone(p), "rank pid %d still running", p)
		}
	}
}

func TestSIGKILLAfterGrace(t *testing.T) {
	cmd, _, pids, cancel := startJob(t, 2, []string{"--kill-grace", "300ms"}, "ignore-term")
	defer cancel()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok)
	assert.Equal(t, 128+int(syscall.SIGTERM), ee.ExitCode())
	assert.Contains(t, cmd.Stderr.(*strings.Builder).String(), "gorun: 2 ranks still running 300ms after SIGTERM; sending SIGKILL")
	for _, p := range pids {
		assert.True(t, processGone(p), "rank pid %d survived SIGKILL", p)
	}
}

func TestSecondInterruptKillsAtOnce(t *testing.T) {
	cmd, _, pids, cancel := startJob(t, 2, []string{"--kill-grace", "1m"}, "ignore-term")
	defer cancel()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok)
	assert.Equal(t, 130, ee.ExitCode())
	assert.Contains(t, cmd.Stderr.(*strings.Builder).String(), "gorun: received interrupt again; killing 2 ranks")
	for _, p := range pids {
		assert.True(t, processGone(p))
	}
}

func TestTimeout(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "3", "--timeout", "500ms"}, "wait-term")...)
	assert.Equal(t, ExitTimeout, res.code)
	assert.Contains(t, res.stderr, "gorun: job timed out after 500ms; terminating 3 ranks")
	assert.Equal(t, 3, strings.Count(res.stdout, ": SIGTERM\n"))
}

// A rank's children are in its process group: they die with the job.
func TestRankChildrenAreKilled(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "3"}, "child", "1", "same-group")...)
	assert.Equal(t, 3, res.code, "stderr: %s", res.stderr)
	pids := childPids(t, res.stdout, 3)
	for _, p := range pids {
		assert.True(t, waitGone(p, 5*time.Second), "child pid %d of a rank outlived the job", p)
	}
}

// A child that left the rank's process group (setsid) and keeps the output pipe open must not
// make gorun hang.
func TestEscapedChildDoesNotHang(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "2"}, "child", "0", "setsid")...)
	pids := childPids(t, res.stdout, 2)
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	assert.Equal(t, 3, res.code, "stderr: %s", res.stderr)
	assert.Less(t, res.elapsed, 30*time.Second)
}

func childPids(t *testing.T, stdout string, n int) []int {
	t.Helper()
	var pids []int
	for _, m := range regexp.MustCompile(`(?m)^child \d+ (\d+)$`).FindAllStringSubmatch(stdout, -1) {
		p, _ := strconv.Atoi(m[1])
		pids = append(pids, p)
	}
	require.Len(t, pids, n, "stdout: %s", stdout)
	return pids
}

// Many ranks writing long lines at once: every line arrives whole, tagged with its own rank,
// in the rank's order, on the stream it was written to.
func TestOutputLinesNeverInterleave(t *testing.T) {
	const n, lines, maxLen = 6, 100, 100_000 // lines up to 100 kB, beyond the 64 KiB pipe buffer
	res := runGorun(t, nil, rankArgs(t, []string{"-n", strconv.Itoa(n), "--tag-output"}, "spam", strconv.Itoa(lines), strconv.Itoa(maxLen))...)
	require.Equal(t, 0, res.code, "stderr tail: %.500s", res.stderr)
	for streamIdx, out := range []string{res.stdout, res.stderr} {
		next := make([]int, n) // next expected line index per rank on this stream
		for _, line := range strings.SplitAfter(out, "\n") {
			if line == "" {
				continue
			}
			var r int
			_, err := fmt.Sscanf(line, "[%d] ", &r)
			require.NoError(t, err, "untagged line %.80q", line)
			require.True(t, r >= 0 && r < n)
			for next[r] < lines && (next[r]%5 == 0) != (streamIdx == 1) {
				next[r]++
			}
			require.Less(t, next[r], lines, "extra line from rank %d: %.80q", r, line)
			want := TagFor(r) + spamLine(r, next[r], maxLen) + "\n"
			if line != want {
				i := 0
				for i < len(line) && i < len(want) && line[i] == want[i] {
					i++
				}
				t.Fatalf("stream %d, rank %d line %d mangled: %d bytes, want %d; first difference at byte %d: %.60q",
					streamIdx, r, next[r], len(line), len(want), i, line[max(0, i-20):])
			}
			next[r]++
		}
		for r := range n {
			for next[r] < lines && (next[r]%5 == 0) != (streamIdx == 1) {
				next[r]++
			}
			assert.Equal(t, lines, next[r], "rank %d: lines missing on stream %d", r, streamIdx)
		}
	}
}

// A slow reader of gorun's output (a pager, a full pipe) must not cost any output: ranks that
// exited keep their remaining output forwarded however long it takes.
func TestSlowReaderLosesNothing(t *testing.T) {
	// About 100 KB a rank: one 64 KiB read waits behind gorun's full stdout while the rest
	// fits in the rank's pipe, so the ranks exit at once with output left in their pipes.
	const n, lines, maxLen = 2, 10, 25_000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := gorunCmd(t, ctx, rankArgs(t, []string{"-n", strconv.Itoa(n), "--stdin", "none"}, "spam", strconv.Itoa(lines), strconv.Itoa(maxLen))...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	time.Sleep(drainTimeout + 1500*time.Millisecond) // the ranks are done long before anyone reads
	out, err := io.ReadAll(stdout)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	want := 0
	for r := range n {
		for i := range lines {
			if i%5 != 0 {
				want += len(spamLine(r, i, maxLen)) + 1
			}
		}
	}
	assert.Equal(t, want, len(out), "bytes of stdout forwarded")
}

func TestTagOutputAndPartialLines(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, []string{"-n", "3", "--tag-output"}, "partial")...)
	require.Equal(t, 0, res.code)
	got := strings.SplitAfter(res.stdout, "\n")
	sort.Strings(got)
	assert.Equal(t, []string{"", "[0] rank 0 no newline\n", "[1] rank 1 no newline\n", "[2] rank 2 no newline\n"}, got)

	// Untagged, a single rank's output is forwarded byte for byte.
	res = runGorun(t, nil, rankArgs(t, []string{"-n", "1"}, "partial")...)
	assert.Equal(t, "rank 0 no newline", res.stdout)
}

func TestStdinGoesToOneRank(t *testing.T) {
	data := make([]byte, 300_000)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	empty := sha256.Sum256(nil)
	none := "0 bytes " + hex.EncodeToString(empty[:])
	for _, tc := range []struct {
		flags []string
		to    int
	}{{nil, 0}, {[]string{"--stdin", "2"}, 2}, {[]string{"--stdin", "none"}, -1}} {
		res := runGorun(t, strings.NewReader(string(data)), rankArgs(t, append([]string{"-n", "3"}, tc.flags...), "stdin")...)
		require.Equal(t, 0, res.code, res.stderr)
		for r := range 3 {
			want := fmt.Sprintf("rank %d read %s\n", r, none)
			if r == tc.to {
				want = fmt.Sprintf("rank %d read %d bytes %s\n", r, len(data), digest)
			}
			assert.Contains(t, res.stdout, want, "flags %v", tc.flags)
		}
	}
}

func envOf(t *testing.T, stdout string) map[int]map[string]string {
	t.Helper()
	env := map[int]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r int
		var kv string
		_, err := fmt.Sscanf(line, "%d %s", &r, &kv)
		require.NoError(t, err, line)
		k, v, _ := strings.Cut(kv, "=")
		if env[r] == nil {
			env[r] = map[string]string{}
		}
		env[r][k] = v
	}
	return env
}

func TestEnvironmentContract(t *testing.T) {
	const n = 4
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	var secrets []string
	for run := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := gorunCmd(t, ctx, rankArgs(t, []string{"-n", strconv.Itoa(n), "--peer-timeout", "7s"}, "env")...)
		// A launcher's variables from an enclosing job must not leak into this one.
		cmd.Env = append(cmd.Env, jobenv.Rank+"=99", jobenv.Size+"=99", jobenv.Secret+"=stale")
		out, err := cmd.Output()
		cancel()
		require.NoError(t, err)
		env := envOf(t, string(out))
		require.Len(t, env, n)
		for r := range n {
			e := env[r]
			assert.Equal(t, strconv.Itoa(r), e[jobenv.Rank])
			assert.Equal(t, strconv.Itoa(n), e[jobenv.Size])
			assert.Equal(t, strconv.Itoa(r), e[jobenv.LocalRank])
			assert.Equal(t, strconv.Itoa(n), e[jobenv.LocalSize])
			assert.Equal(t, "7s", e[jobenv.PeerTimeout])
			assert.Regexp(t, hex64, e[jobenv.Secret])
			assert.Regexp(t, hex16, e[jobenv.JobID])
			assert.Regexp(t, `^127\.0\.0\.1:\d+$`, e[jobenv.Coord])
			for _, k := range []string{jobenv.Secret, jobenv.JobID, jobenv.Coord} {
				assert.Equal(t, env[0][k], e[k], "%s differs between rank 0 and rank %d", k, r)
			}
		}
		secrets = append(secrets, env[0][jobenv.Secret])
		_ = run
	}
	assert.NotEqual(t, secrets[0], secrets[1], "two jobs got the same secret")
}

func TestExportFlag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := gorunCmd(t, ctx, rankArgs(t, []string{"-n", "2", "-x", "LAUNCHER_FOO=a=b c", "-x", "LAUNCHER_PASS", "-x", "LAUNCHER_UNSET_XYZ"}, "env")...)
	cmd.Env = append(cmd.Env, "LAUNCHER_PASS=from gorun")
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	require.NoError(t, err, errb.String())
	env := envOf(t, string(out))
	for r := range 2 {
		assert.Equal(t, "a=b", env[r]["LAUNCHER_FOO"]) // Sscanf %s stops at the space
		assert.Equal(t, "from", env[r]["LAUNCHER_PASS"])
		assert.Equal(t, "<unset>", env[r][jobenv.PeerTimeout], "no --peer-timeout, none set")
	}
	assert.Contains(t, string(out), "0 LAUNCHER_FOO=a=b c\n")
	assert.Contains(t, string(out), "1 LAUNCHER_PASS=from gorun\n")
	assert.Contains(t, errb.String(), "gorun: warning: -x LAUNCHER_UNSET_XYZ: not set in gorun's environment")
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-n", "0", "true"}, "-n must be a positive number of ranks, got 0"},
		{[]string{"-n", "-2", "true"}, "-n must be a positive number of ranks, got -2"},
		{[]string{"true"}, "the number of ranks is required"},
		{[]string{"-n", "2"}, "no PROGRAM given"},
		{[]string{"-n", "x", "true"}, `invalid argument "x"`},
		{[]string{"-n", "2", "--bogus", "true"}, "unknown flag: --bogus"},
		{[]string{"-n", "2", "--stdin", "5", "true"}, "--stdin 5: no such rank in a job of 2"},
		{[]string{"-n", "2", "--timeout", "-1s", "true"}, "--timeout must not be negative"},
		{[]string{"-n", "2", "-x", "1BAD=x", "true"}, `-x "1BAD=x": not a valid variable name`},
		{[]string{"-n", "2", "no-such-program-gorun-xyz"}, `program "no-such-program-gorun-xyz": not found: not on PATH`},
		{[]string{"-n", "2", "./no/such/file"}, `program "./no/such/file": no such file or directory`},
		{[]string{"-n", "2", "./testdata/notmain"}, "not a main package"},
	} {
		res := runGorun(t, nil, tc.args...)
		assert.Equal(t, ExitUsage, res.code, "%q", tc.args)
		assert.Contains(t, res.stderr, tc.msg, "%q", tc.args)
		assert.True(t, strings.HasPrefix(res.stderr, "gorun: "), "%q: %s", tc.args, res.stderr)
	}
}

func TestBuildFailureIsReported(t *testing.T) {
	res := runGorun(t, nil, "-n", "2", "./testdata/broken")
	assert.Equal(t, ExitFailure, res.code)
	assert.Contains(t, res.stderr, "main.go:5")            // the compiler's own message
	assert.Contains(t, res.stderr, "gorun: go build in /") // and gorun's
}

func TestHelp(t *testing.T) {
	res := runGorun(t, nil, "--help")
	assert.Equal(t, 0, res.code)
	assert.Contains(t, res.stdout, "Usage: gorun -n N [flags] PROGRAM [ARGS...]")
	assert.Contains(t, res.stdout, "--tag-output")
}

func TestRunGoPackageDirectory(t *testing.T) {
	res := runGorun(t, nil, "-n", "3", "-np", "2", "./testdata/hello") // the last count wins
	require.Equal(t, 0, res.code, res.stderr)
	got := strings.Split(strings.TrimSpace(res.stdout), "\n")
	sort.Strings(got)
	assert.Equal(t, []string{"hello from rank 0 of 2", "hello from rank 1 of 2"}, got)
}
