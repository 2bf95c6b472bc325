package launcher

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end: gorun builds and runs the project's own comm examples, whose ranks bootstrap
// from the environment gorun writes and talk over comm's TCP transport.

func TestExamplesOverComm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the comm examples")
	}

	t.Run("hello", func(t *testing.T) {
		res := runGorun(t, nil, "-n", "4", "../examples/hello")
		require.Equal(t, 0, res.code, res.stderr)
		var ranks []int
		for _, m := range regexp.MustCompile(`(?m)^hello from rank (\d+) of 4 on .+ \(pid \d+\)$`).FindAllStringSubmatch(res.stdout, -1) {
			r, _ := strconv.Atoi(m[1])
			ranks = append(ranks, r)
		}
		sort.Ints(ranks)
		assert.Equal(t, []int{0, 1, 2, 3}, ranks, res.stdout)
	})

	t.Run("ring", func(t *testing.T) {
		for _, n := range []int{3, 5} {
			res := runGorun(t, nil, "-n", strconv.Itoa(n), "--tag-output", "../examples/ring", "--laps", "3")
			require.Equal(t, 0, res.code, "n=%d: %s", n, res.stderr)
			want := int64(3) * (1 + int64(n)*int64(n-1)/2)
			assert.Contains(t, res.stdout, fmt.Sprintf("[0] ring of %d ranks: 3 laps, token %d: correct\n", n, want))
			assert.Contains(t, res.stdout, fmt.Sprintf("[0] lap 3: token back at rank 0 with value %d\n", want))
		}
	})

	t.Run("pi", func(t *testing.T) {
		res := runGorun(t, nil, "-n", "4", "../examples/pi", "--intervals", "2000000")
		require.Equal(t, 0, res.code, res.stderr)
		m := regexp.MustCompile(`^pi is approximately (\S+), error \S+ \(2000000 intervals, 4 ranks, `).FindStringSubmatch(res.stdout)
		require.NotNil(t, m, res.stdout)
		pi, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		// The midpoint rule with h = 5e-7 is accurate to about h^2/12 * max|f''| (~1e-13).
		assert.InDelta(t, math.Pi, pi, 1e-10)
	})

	t.Run("stray rank", func(t *testing.T) {
		// A rank leaves while its peers wait in comm.Recv on it: the job ends at once, long
		// before comm's peer timeout (1 min here).
		//
		// Killed by a signal, the rank is named whatever the timing.
		res := runGorun(t, nil, "-n", "3", "--oversubscribe", "--peer-timeout", "1m", "./testdata/commstray", "2", "kill")
		assert.Equal(t, 137, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
		assert.Regexp(t, `^gorun: rank 2 \(pid \d+\) was killed by signal 9 \(killed\)(; terminating [12] other ranks?)?\n`+
			`(gorun: also failed \(after rank 2\): rank [01] \(pid \d+\) exited with code 1(, rank [01] \(pid \d+\) exited with code 1)?\n)?$`, res.stderr)
		assert.Less(t, res.elapsed, 30*time.Second)

		// Exiting with a code, it is named even when its peers, which see its socket close
		// before its exit completes, finish exiting (code 1) before it on a loaded machine:
		// they print the rank they lost.
		res = runGorun(t, nil, "-n", "3", "--oversubscribe", "--peer-timeout", "1m", "./testdata/commstray", "2", "5")
		assert.Equal(t, 5, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
		assert.Regexp(t, `^gorun: rank 2 \(pid \d+\) exited with code 5(; terminating [12] other ranks?)?\n`+
			`(gorun: also failed \(after rank 2\): rank [01] \(pid \d+\) exited with code 1(, rank [01] \(pid \d+\) exited with code 1)?\n)?$`, res.stderr)
		assert.Less(t, res.elapsed, 30*time.Second)
	})
}

// A rank panics and a peer exits 5 on losing it: gorun names the rank that failed first, with
// the peer after it, and exits with the highest code. In "slow" mode the panicking rank's
// sockets close 300 ms before it exits (a dying rank preempted on its way out, stretched), so
// the peer has exited first by the kernel's clock; its report of the peer it lost decides. In
// "stop" mode the rank stops (SIGSTOP) rather than exit: the peer's report after its peer
// timeout is the rank's failure.
func TestFirstToFailIsNamedFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a comm program")
	}
	modes := []string{"now", "stop"}
	if runtime.GOOS == "linux" {
		modes = append(modes, "slow") // the helper finds its sockets in /proc
	}
	gorunLine := regexp.MustCompile(`(?m)^gorun: .*$`)
	named := map[string]string{
		"stop": `^gorun: rank 1 \(pid \d+\) was reported lost by rank 2 and has not exited; terminating it and 1 other rank$`,
		// On a machine loaded enough that the dying rank takes longer to exit than gorun
		// waits for it, it is named from its peer's report instead.
		"now":  `^gorun: rank 1 \(pid \d+\) (exited with code 2; terminating [12] other ranks?|was reported lost by rank 2 and has not exited; terminating it and 1 other rank)$`,
		"slow": `^gorun: rank 1 \(pid \d+\) (exited with code 2; terminating 1 other rank|was reported lost by rank 2 and has not exited; terminating it and 1 other rank)$`,
	}
	also := regexp.MustCompile(`^gorun: also failed \(after rank 1\): rank 2 \(pid \d+\) exited with code 5$`)
	killed := regexp.MustCompile(`^gorun: [12] ranks? still running 200ms after SIGTERM; sending SIGKILL$`)
	report := map[string]string{
		"stop": `commblame: rank 2: recv from rank 1: rank 1: no word from \S+ for 2s \(peer timeout\)`,
		"now":  `commblame: rank 2: recv from rank 1: rank 1: connection to \S+ closed by the peer`,
		"slow": `commblame: rank 2: recv from rank 1: rank 1: connection to \S+ closed by the peer`,
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			res := runGorun(t, nil, "-n", "3", "--oversubscribe", "--peer-timeout", "2s", "--kill-grace", "200ms", "./testdata/commblame", "1", "2", mode)
			msg := fmt.Sprintf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			lines := gorunLine.FindAllString(res.stderr, -1)
			require.NotEmpty(t, lines, msg)
			assert.Regexp(t, named[mode], lines[0], msg)
			rest := lines[1:]
			if len(rest) > 0 && also.MatchString(rest[0]) {
				assert.Equal(t, 5, res.code, msg)
				assert.Regexp(t, report[mode], res.stderr)
				rest = rest[1:]
			} else {
				// Only in "now" mode may the peer not have exited by the time gorun judged;
				// it is then terminated with the others.
				assert.Equal(t, "now", mode, "rank 2 not listed after rank 1: %s", msg)
				assert.Equal(t, 2, res.code, msg)
			}
			for _, l := range rest {
				assert.Regexp(t, killed, l, msg) // the stopped rank, or a rank slow to exit
			}
		})
	}
}

// On the real repository, a bare name is one of the module's own commands, built on demand:
// what makes `go run ./cmd/gorun -n 4 hpl` work on a fresh clone.
func TestModuleCommandOfThisRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/gorun")
	}
	empty := t.TempDir()
	r := Resolver{Dir: filepath.Join("..", "examples"), Path: empty, SelfExe: filepath.Join(empty, "gorun"), CacheDir: t.TempDir()}
	exe, err := r.Resolve("gorun")
	require.NoError(t, err)
	out, err := exec.Command(exe, "--help").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "gorun starts an SPMD program"), "%s", out)
	_, err = os.Stat(exe)
	require.NoError(t, err)
}
