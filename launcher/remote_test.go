package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Remote hosts in these tests are addresses of TEST-NET-2 (RFC 5737), which no machine has,
// reached through fakeSSH: the test binary in the part of ssh, which runs the remote command
// on this machine as sshd would (in a session of its own, via /bin/sh -c) or, for
// unreachableHost, fails as ssh does.
const (
	remoteA         = "198.51.100.1"
	remoteB         = "198.51.100.2"
	unreachableHost = "198.51.100.99"
)

// fakeSSH parses an ssh command line (options, host, command words) and runs the command.
func fakeSSH(args []string) int {
	withValue := "BbcDEeFIiJLlmOoPpQRSWw"
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if f := args[i]; len(f) == 2 && strings.Contains(withValue, f[1:]) {
			i++
		}
	}
	if i >= len(args) {
		fmt.Fprintln(os.Stderr, "fake ssh: no host")
		return 255
	}
	host, command := args[i], strings.Join(args[i+1:], " ")
	if host == unreachableHost {
		// A real ssh times out only after the other hosts' ranks are up; failing at once would
		// let gorun terminate them before they can report the SIGTERM the test looks for.
		waitAnyReady()
		fmt.Fprintf(os.Stderr, "ssh: connect to host %s port 22: Connection timed out\n", host)
		return 255
	}
	if !strings.HasPrefix(command, "exec /bin/sh -c ") {
		fmt.Fprintf(os.Stderr, "fake ssh: unexpected remote command %q\n", command)
		return 255
	}
	// sshd makes the session a process group of its own: so does gorun for the ssh it starts,
	// and exec keeps it.
	err := syscall.Exec("/bin/sh", []string{"sh", "-c", command}, os.Environ())
	fmt.Fprintln(os.Stderr, "fake ssh:", err)
	return 255
}

func sshFlags(t *testing.T, hosts string) []string {
	return []string{"-H", hosts, "--ssh", "env LAUNCHER_TEST_ROLE=ssh " + self(t)}
}

func TestRemoteRanksGetTheJobEnvironment(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, append(sshFlags(t, remoteA+":2,"+remoteB), "-x", "LAUNCHER_FOO=bar baz'q"), "env")...)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	assert.Empty(t, res.stderr)
	for _, want := range []string{"0 GORUN_RANK=0", "1 GORUN_RANK=1", "2 GORUN_RANK=2", "2 GORUN_SIZE=3",
		"0 GORUN_LOCAL_RANK=0", "1 GORUN_LOCAL_RANK=1", "2 GORUN_LOCAL_RANK=0", "1 GORUN_LOCAL_SIZE=2", "2 GORUN_LOCAL_SIZE=1",
		"0 LAUNCHER_FOO=bar baz'q", "2 LAUNCHER_PASS=<unset>"} {
		assert.Contains(t, res.stdout, want+"\n")
	}
	// gorun serves the rendezvous on the address that reaches the hosts, not on loopback.
	assert.Regexp(t, `0 GORUN_COORD=[0-9.]+:\d+\n`, res.stdout)
	assert.NotContains(t, res.stdout, "GORUN_COORD=127.0.0.1")
}

func TestRemoteRankFailureTearsDownTheJob(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, sshFlags(t, remoteA+":2,"+remoteB+":2"), "fail", "2", "5")...)
	assert.Equal(t, 5, res.code, "stderr: %s", res.stderr)
	assert.Regexp(t, `gorun: rank 2 on `+regexp.QuoteMeta(remoteB)+` exited with code 5; terminating 3 other ranks`, res.stderr)
	for _, r := range []int{0, 1, 3} {
		assert.Contains(t, res.stdout, fmt.Sprintf("rank %d: SIGTERM\n", r))
	}
	assert.NotContains(t, res.stderr+res.stdout, "gorun-rank-status")
}

func TestInterruptReachesRemoteRanks(t *testing.T) {
	cmd, sc, _, cancel := startJob(t, 3, sshFlags(t, remoteA+":3"), "wait-term")
	defer cancel()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	assert.ElementsMatch(t, []string{"rank 0: SIGTERM", "rank 1: SIGTERM", "rank 2: SIGTERM"}, rest)
}

func TestUnreachableHostIsNamed(t *testing.T) {
	res := runGorun(t, nil, rankArgs(t, sshFlags(t, remoteA+","+unreachableHost), "wait-term")...)
	assert.Equal(t, 255, res.code, "stderr: %s", res.stderr)
	assert.Contains(t, res.stderr, "ssh: connect to host "+unreachableHost+" port 22: Connection timed out")
	assert.Regexp(t, `gorun: rank 1 on `+regexp.QuoteMeta(unreachableHost)+` is lost: ssh to `+regexp.QuoteMeta(unreachableHost)+` failed or lost the connection`, res.stderr)
	assert.Contains(t, res.stdout, "rank 0: SIGTERM")
	assert.Contains(t, res.stderr, "gorun: lost contact with "+unreachableHost+" (rank 1)")
}

// A host without the program: the script says so and reports 127, as a shell would.
func TestMissingProgramOnRemoteHost(t *testing.T) {
	script := remoteScript(t.TempDir(), "/nonexistent/prog", nil, nil, statusMark("t"), time.Second)
	out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 127, ee.ExitCode())
	assert.Regexp(t, `^gorun: /nonexistent/prog: no such executable on \S+\ngorun-rank-status:t:127\n$`, string(out))
}

// A real comm job (examples/ring) across "hosts" and this host, the data plane on --iface.
func TestRingAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/ring")
	}
	res := runGorun(t, nil, append(sshFlags(t, "localhost:1,"+remoteA+":2,"+remoteB+":2"), "--iface", "127.0.0.0/8", "--map-by", "node", "../examples/ring", "--laps", "3")...)
	require.Equal(t, 0, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
	assert.Contains(t, res.stdout, "ring of 5 ranks: 3 laps, token 33: correct")
}

func TestRemoteScriptQuoting(t *testing.T) {
	// Run the script locally through sh, as a remote login shell would, with awkward words.
	script := remoteScript(t.TempDir(), "/bin/sh", []string{"-c", `printf '%s|' "$0" "$@"; printf '%s\n' "$V"`, "a b", `it's`, `$HOME`, `"q"`, ""},
		[]string{`V=x'y"z $1 \n`}, statusMark("t"), time.Second)
	cmd := exec.Command("/bin/sh", "-c", "exec /bin/sh -c "+shellQuote(script))
	// The session's stdin stays open while gorun runs; at EOF the script would end the program.
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	cmd.Stdin = pr
	out, err := cmd.CombinedOutput()
	pr.Close()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, `a b|it's|$HOME|"q"||x'y"z $1 \n`+"\ngorun-rank-status:t:0\n", string(out))
}

func TestSplitShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                           nil,
		"ssh":                        {"ssh"},
		"  -i key  -o 'A=b c' ":      {"-i", "key", "-o", "A=b c"},
		`-o "ProxyCommand=nc %h %p"`: {"-o", "ProxyCommand=nc %h %p"},
		`a\ b "x\"y" 'z'w`:           {"a b", `x"y`, "zw"},
	} {
		got, err := SplitShellWords(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"'open", `"open`, `trail\`} {
		_, err := SplitShellWords(bad)
		assert.Error(t, err, bad)
	}
}
