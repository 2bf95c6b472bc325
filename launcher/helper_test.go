package launcher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// The test binary plays three parts, chosen by LAUNCHER_TEST_ROLE: the test runner (unset),
// gorun itself ("gorun": Main on the arguments), and a rank ("rank": one of the behaviours of
// rankMain). The tests run it as gorun with the test binary as PROGRAM and -x
// LAUNCHER_TEST_ROLE=rank, so every test drives real processes through the real command line.
const roleVar = "LAUNCHER_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "gorun":
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "rank":
		os.Exit(rankMain(os.Args[1:]))
	case "ssh":
		os.Exit(fakeSSH(os.Args[1:]))
	}
	// One build cache for the package's tests: each program is linked once, not once a test.
	cache, err := os.MkdirTemp("", "launcher-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("GORUN_CACHE_DIR", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

func myRank() int {
	r, _ := strconv.Atoi(os.Getenv(jobenv.Rank))
	return r
}

// rankMain runs one rank behaviour and returns its exit code.
func rankMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "rank: no behaviour")
		return 100
	}
	r := myRank()
	switch args[0] {
	case "env":
		for _, k := range []string{jobenv.Rank, jobenv.Size, jobenv.LocalRank, jobenv.LocalSize, jobenv.Coord, jobenv.JobID, jobenv.Secret, jobenv.PeerTimeout, jobenv.Oversubscribed, "LAUNCHER_FOO", "LAUNCHER_PASS"} {
			v, ok := os.LookupEnv(k)
			if !ok {
				v = "<unset>"
			}
			fmt.Printf("%d %s=%s\n", r, k, v)
		}
		return 0

	case "exit": // exit CODE: every rank exits CODE at once
		c, _ := strconv.Atoi(args[1])
		return c

	case "fail", "selfkill": // fail RANK CODE | selfkill RANK: that rank fails once all are ready
		target, _ := strconv.Atoi(args[1])
		terms := readyForTerm(r)
		if r != target {
			<-terms
			fmt.Printf("rank %d: SIGTERM\n", r)
			return 0
		}
		waitAllReady()
		fmt.Printf("rank %d: failing\n", r)
		if args[0] == "selfkill" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		c, _ := strconv.Atoi(args[2])
		return c

	case "cascade": // cascade TARGET: TARGET exits 9; the others notice at once and exit 1
		target, _ := strconv.Atoi(args[1])
		lock, err := os.OpenFile(filepath.Join(os.Getenv("LAUNCHER_TEST_DIR"), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if r == target {
			// The kernel drops the lock when the process exits: the others' cue that it died.
			syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
			readyForTerm(r)
			waitAllReady()
			return 9
		}
		readyForTerm(r)
		waitAllReady()
		syscall.Flock(int(lock.Fd()), syscall.LOCK_SH)
		// As a peer takes a moment to see a connection close; long enough that the target's
		// exit, which released the lock, completes first even when it is preempted on its way.
		time.Sleep(100 * time.Millisecond)
		fmt.Printf("rank %d: lost rank %d\n", r, target)
		return 1

	case "wait-term": // wait for SIGTERM, report it, exit 0
		terms := readyForTerm(r)
		fmt.Printf("ready %d %d\n", r, os.Getpid())
		<-terms
		fmt.Printf("rank %d: SIGTERM\n", r)
		return 0

	case "ignore-term": // survive SIGTERM: only SIGKILL ends this rank
		signal.Ignore(syscall.SIGTERM)
		fmt.Printf("ready %d %d\n", r, os.Getpid())
		time.Sleep(time.Minute)
		return 0

	case "sleep":
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
		return 0

	case "spam": // spam LINES MAXLEN: write deterministic lines of varied length, one write each
		lines, _ := strconv.Atoi(args[1])
		maxLen, _ := strconv.Atoi(args[2])
		for i := 0; i < lines; i++ {
			w := os.Stdout
			if i%5 == 0 {
				w = os.Stderr
			}
			w.WriteString(spamLine(r, i, maxLen) + "\n")
		}
		return 0

	case "stdin": // report how much stdin this rank read and its digest
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Printf("rank %d: read stdin: %v\n", r, err)
			return 1
		}
		sum := sha256.Sum256(b)
		fmt.Printf("rank %d read %d bytes %s\n", r, len(b), hex.EncodeToString(sum[:]))
		return 0

	case "partial": // a last line without newline
		fmt.Printf("rank %d no newline", r)
		return 0

	case "child": // child FAILRANK SETSID: start a sleeping child, print its pid, fail or wait
		target, _ := strconv.Atoi(args[1])
		setsid := args[2] == "setsid"
		terms := readyForTerm(r)
		cmd := exec.Command(os.Args[0], "sleep", "1m")
		cmd.Stdout = os.Stdout // the child holds the rank's output pipe
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
		if err := cmd.Start(); err != nil {
			fmt.Printf("rank %d: start child: %v\n", r, err)
			return 1
		}
		fmt.Printf("child %d %d\n", r, cmd.Process.Pid)
		if r != target {
			<-terms
			return 0
		}
		waitAllReady()
		return 3
	}
	fmt.Fprintf(os.Stderr, "rank: unknown behaviour %q\n", args[0])
	return 100
}

// readyForTerm installs the SIGTERM handler, then marks this rank ready in LAUNCHER_TEST_DIR,
// so a failing rank that waits for all marks knows every other rank will report its SIGTERM.
func readyForTerm(r int) <-chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	if d := os.Getenv("LAUNCHER_TEST_DIR"); d != "" {
		os.WriteFile(filepath.Join(d, fmt.Sprintf("ready.%d", r)), nil, 0o600)
	}
	return c
}

// waitAllReady waits (up to 20 s) until every rank of the job has reported ready.
func waitAllReady() {
	n, _ := strconv.Atoi(os.Getenv(jobenv.Size))
	waitReady(n)
}

// waitAnyReady waits (up to 20 s) until some rank of the test's job has reported ready.
func waitAnyReady() { waitReady(1) }

// waitReady waits (up to 20 s) until n ranks have reported ready in LAUNCHER_TEST_DIR.
func waitReady(n int) {
	d := os.Getenv("LAUNCHER_TEST_DIR")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(d, "ready.*")); len(m) >= n {
			return
		}
	}
}

// spamLine is line i of rank r in the "spam" behaviour: lengths from a few bytes to maxLen.
func spamLine(r, i, maxLen int) string {
	n := (i*7919 + r*104729) % maxLen
	return fmt.Sprintf("r%d i%d %s.", r, i, strings.Repeat(string(rune('a'+(r+i)%26)), n))
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// self is the test binary, run as gorun and as every rank.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// gorunCmd prepares the test binary as gorun with args; the ranks run the test binary as well
// unless args name another PROGRAM. A per-test LAUNCHER_TEST_DIR is passed to the ranks.
func gorunCmd(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, self(t), args...)
	cmd.Env = append(os.Environ(), roleVar+"=gorun", "LAUNCHER_TEST_DIR="+t.TempDir())
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// rankArgs builds gorun's arguments for a job of the test binary's rank behaviours. They
// include --oversubscribe, so that a job of more ranks than this machine has cores prints no
// warning among the messages the tests check (TestOversubscription checks the warning).
func rankArgs(t *testing.T, gorunFlags []string, behaviour ...string) []string {
	a := append([]string{"--oversubscribe"}, gorunFlags...)
	a = append(a, "-x", roleVar+"=rank", "-x", "LAUNCHER_TEST_DIR", self(t))
	return append(a, behaviour...)
}

// runGorun runs gorun to completion (bounded by 60 s: a hang fails the test, not the suite).
func runGorun(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := gorunCmd(t, ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, stdin
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("gorun %q did not finish within 60 s\nstdout:\n%s\nstderr:\n%s", args, res.stdout, res.stderr)
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("gorun %q: %v", args, err)
		}
		res.code = ee.ExitCode()
	}
	return res
}

// processGone reports whether pid no longer runs (absent, or a zombie waiting for its reaper).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// waitGone polls until pid is gone or d passes.
func waitGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if processGone(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
