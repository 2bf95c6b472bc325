package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

func TestMarkOversubscribed(t *testing.T) {
	// This host only: more ranks than cores.
	p := placeLocal(3)
	assert.Equal(t, 3, markOversubscribed(p, nil, 2))
	for _, pl := range p {
		assert.True(t, pl.Oversubscribed)
	}
	p = placeLocal(2)
	assert.Equal(t, 0, markOversubscribed(p, nil, 2))
	assert.False(t, p[0].Oversubscribed || p[1].Oversubscribed)

	// Remote hosts count their slots as cores; a host named on two lines has both lines' slots.
	hosts := []Host{{Name: "a", Slots: 2}, {Name: "b", Slots: 1}, {Name: "c", Slots: 3}}
	p, err := Map(hosts, 8, false, true) // the two ranks beyond the slots go to a and b
	require.NoError(t, err)
	assert.Equal(t, 0, markOversubscribed(p, hosts, 1))
	got := map[string]bool{}
	for _, pl := range p {
		got[pl.Host] = pl.Oversubscribed
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": false}, got)

	p = []Placement{{Rank: 0, Host: "a"}, {Rank: 1, Host: "a"}, {Rank: 2}}
	assert.Equal(t, 0, markOversubscribed(p, []Host{{Name: "a", Slots: 1}, {Name: "a", Slots: 1}}, 4))
	assert.False(t, p[0].Oversubscribed || p[2].Oversubscribed)
}

// Each rank of a shared host gets its share of the host's processors (at least one); a rank
// alone on its host keeps the runtime's default.
func TestShareCores(t *testing.T) {
	for _, c := range []struct{ np, procs, share int }{{1, 2, 0}, {2, 2, 1}, {3, 2, 1}, {2, 16, 8}, {3, 16, 5}, {4, 16, 4}, {16, 16, 1}, {17, 16, 1}} {
		p := placeLocal(c.np)
		shareCores(p, nil, c.procs)
		for _, pl := range p {
			assert.Equal(t, c.share, pl.Procs, "%d ranks on %d processors", c.np, c.procs)
		}
	}
	// Remote hosts share their slots: 3 ranks on a's 2, 2 on b's 1, 3 on c's 3, 4 on d's 8
	// (two lines), and the one rank here keeps the default.
	hosts := []Host{{Name: "a", Slots: 2}, {Name: "b", Slots: 1}, {Name: "c", Slots: 3}, {Name: "d", Slots: 4}, {Name: "d", Slots: 4}}
	var p []Placement
	for h, n := range map[string]int{"a": 3, "b": 2, "c": 3, "d": 4, "": 1} {
		for range n {
			p = append(p, Placement{Rank: len(p), Host: h})
		}
	}
	shareCores(p, hosts, 2)
	got := map[string]int{}
	for _, pl := range p {
		got[pl.Host] = pl.Procs
	}
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 2, "": 0}, got)
	assert.GreaterOrEqual(t, localProcs(), 1)
}

// gorunOnCores runs gorun with args on this host's CPUs, or on CPU 0 alone where taskset
// exists, and returns the number of cores gorun sees and the result.
func gorunOnCores(t *testing.T, n func(cores int) int, args ...string) (int, int, result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cores := runtime.NumCPU() // gorun inherits this process's affinity mask
	cmd := gorunCmd(t, ctx)
	if ts, err := exec.LookPath("taskset"); err == nil && runtime.GOOS == "linux" {
		cmd.Args = []string{ts, "-c", "0", cmd.Path}
		cmd.Path = ts
		cores = 1
	}
	np := n(cores)
	cmd.Args = append(cmd.Args, rankArgsNoOversubscribe(t, append([]string{"-n", strconv.Itoa(np)}, args...), "env")...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return cores, np, res
}

// rankArgsNoOversubscribe is rankArgs without the --oversubscribe it adds.
func rankArgsNoOversubscribe(t *testing.T, flags []string, behaviour ...string) []string {
	a := rankArgs(t, flags, behaviour...)
	require.Equal(t, "--oversubscribe", a[0])
	return a[1:]
}

func TestOversubscription(t *testing.T) {
	warning := regexp.MustCompile(`(?m)^gorun: warning: (\d+) ranks on this host's (\d+) cores?: oversubscribed, the ranks take turns on them \(--oversubscribe silences this\)$`)
	for _, tc := range []struct {
		name   string
		extra  int // ranks beyond the cores
		flags  []string
		warned bool
		marked bool
	}{
		{"more ranks than cores", 1, nil, true, true},
		{"as many ranks as cores", 0, nil, false, false},
		{"--oversubscribe", 1, []string{"--oversubscribe"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cores, np, res := gorunOnCores(t, func(c int) int { return c + tc.extra }, tc.flags...)
			require.Equal(t, 0, res.code, res.stderr)
			if tc.warned {
				m := warning.FindAllStringSubmatch(res.stderr, -1)
				require.Len(t, m, 1, res.stderr)
				assert.Equal(t, []string{strconv.Itoa(np), strconv.Itoa(cores)}, m[0][1:])
				assert.Equal(t, m[0][0]+"\n", res.stderr, "one line, nothing else")
			} else {
				assert.Empty(t, res.stderr)
			}
			env := envOf(t, res.stdout)
			require.Len(t, env, np)
			want := "<unset>"
			if tc.marked {
				want = "1"
			}
			for r := range np {
				assert.Equal(t, want, env[r][jobenv.Oversubscribed], "rank %d", r)
			}
		})
	}
}

// A job that needs more open files than gorun may have fails before it starts any rank,
// naming the need and the limit; under the same limit a smaller job runs.
func TestOpenFilesLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the limit is lowered with the shell's ulimit, checked on Linux")
	}
	const limit = 200
	run := func(np int) result {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := gorunCmd(t, ctx, rankArgs(t, []string{"-n", strconv.Itoa(np)}, "exit", "0")...)
		// ulimit -n sets the soft and the hard limit: gorun cannot raise it.
		cmd.Args = append([]string{"/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, limit), "sh", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/sh"
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		res := result{stdout: out.String(), stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return res
	}
	res := run(100)
	assert.Equal(t, ExitFailure, res.code)
	need := fdsOwn + 100*fdsPerLocalRank
	assert.Equal(t, fmt.Sprintf("gorun: 100 ranks need about %d open files in gorun; the limit is %d (ulimit -n; raise the hard limit, ulimit -Hn, or run fewer ranks)\n", need, limit), res.stderr)
	assert.Empty(t, res.stdout, "no rank started")

	np := (limit - fdsOwn) / fdsPerLocalRank
	res = run(np)
	assert.Equal(t, 0, res.code, "%d ranks under a limit of %d: %s", np, limit, res.stderr)
	assert.False(t, strings.Contains(res.stderr, "open files"), res.stderr)
}

// A rank that shares its host gets GOMAXPROCS set to its share of the cores unless gorun's
// environment or a -x export sets GOMAXPROCS; a rank alone on its host keeps the runtime's
// default.
func TestRankEnvGOMAXPROCS(t *testing.T) {
	gomaxprocs := func(env []string) []string {
		var got []string
		for _, e := range env {
			if e == "GOMAXPROCS" || strings.HasPrefix(e, "GOMAXPROCS=") {
				got = append(got, e)
			}
		}
		return got
	}
	crowded := Placement{Rank: 1, LocalRank: 1, LocalSize: 3, Oversubscribed: true, Procs: 1}
	shared := Placement{Rank: 1, LocalRank: 1, LocalSize: 2, Procs: 8}
	alone := Placement{Rank: 1, LocalSize: 1, Host: "node2"}
	j := &Job{}
	assert.Equal(t, []string{"GOMAXPROCS=1"}, gomaxprocs(j.RankEnv([]string{"PATH=/bin"}, Identity{}, crowded, 3)))
	assert.Equal(t, []string{"GOMAXPROCS=8"}, gomaxprocs(j.RankEnv([]string{"PATH=/bin"}, Identity{}, shared, 2)))
	assert.Empty(t, gomaxprocs(j.RankEnv([]string{"PATH=/bin"}, Identity{}, alone, 2)))
	assert.Equal(t, []string{"GOMAXPROCS=3"}, gomaxprocs(j.RankEnv([]string{"GOMAXPROCS=3"}, Identity{}, crowded, 3)))
	j.Export = []string{"GOMAXPROCS=2"}
	assert.Equal(t, []string{"GOMAXPROCS=2"}, gomaxprocs(j.RankEnv(nil, Identity{}, crowded, 3)))
	j.Export = []string{"GOMAXPROCSX=2"}
	assert.Equal(t, []string{"GOMAXPROCS=1"}, gomaxprocs(j.RankEnv(nil, Identity{}, crowded, 3)))
	// A remote rank gets the exports, not gorun's environment: GOMAXPROCS=1 reaches it even
	// when gorun's own environment sets GOMAXPROCS, and a -x export still wins there.
	j.Export = nil
	remote := crowded
	remote.Host = "node2"
	env := j.RankEnv([]string{"GOMAXPROCS=3"}, Identity{}, remote, 3)
	assert.Equal(t, []string{"GOMAXPROCS=1"}, gomaxprocs(remoteEnv(env, j.rankExports(nil, remote))))
	j.Export = []string{"GOMAXPROCS=4"}
	env = j.RankEnv(nil, Identity{}, remote, 3)
	assert.Equal(t, []string{"GOMAXPROCS=4"}, gomaxprocs(remoteEnv(env, j.rankExports(nil, remote))))
	assert.Equal(t, []string{"GOMAXPROCS=4"}, j.Export, "the job's exports stay as given")
}
