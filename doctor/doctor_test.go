package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/launcher"
)

// The test binary is also gorun for the measuring jobs: run as "TESTBIN doctor ...", it is
// doctor.Main, as cmd/gorun dispatches it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "doctor" {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// quick are measuring parameters for tests: correct figures, not good ones.
func quick(label string) params {
	return params{label: label, latMsg: 8, latTime: 20 * time.Millisecond, bwMsg: 64 << 10, window: 4, bwTime: 30 * time.Millisecond}
}

func TestParseSNMP(t *testing.T) {
	b, err := os.ReadFile("testdata/snmp.txt")
	require.NoError(t, err)
	s, ok := parseSNMP(string(b))
	require.True(t, ok)
	assert.Equal(t, tcpStats{OutSegs: 981821, RetransSegs: 580, EstabResets: 22920, OutRsts: 19565}, s)

	_, ok = parseSNMP("Tcp: OutSegs RetransSegs\nTcp: 1\n")
	assert.False(t, ok, "a values line shorter than its header")
	_, ok = parseSNMP("Udp: a b\nUdp: 1 2\n")
	assert.False(t, ok, "no Tcp lines")
}

func TestProcParsers(t *testing.T) {
	assert.Equal(t, "madvise", bracketed("always [madvise] never\n"))
	assert.Equal(t, "never", bracketed("never"))
	mem := "MemTotal:       24637728 kB\nMemFree:         1000 kB\nMemAvailable:   23900000 kB\n"
	assert.Equal(t, uint64(24637728)<<10, meminfoBytes(mem, "MemTotal"))
	assert.Equal(t, uint64(23900000)<<10, meminfoBytes(mem, "MemAvailable"))
	assert.Zero(t, meminfoBytes(mem, "SwapTotal"))
	assert.Equal(t, "Debian GNU/Linux 12 (bookworm)", firstField("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "PRETTY_NAME", "="))
}

func TestParseArgs(t *testing.T) {
	o, help, err := ParseArgs([]string{"-n", "3", "--transports", "tcp,shm,tcp", "--plot", "x.png"})
	require.NoError(t, err)
	assert.False(t, help)
	assert.Equal(t, 3, o.NP)
	assert.Equal(t, []string{"tcp", "shm"}, o.Transports)
	for _, bad := range [][]string{
		{"--transports", "udp"},
		{"-n", "0"},
		{"-n", "2", "-H", "a,b"},
		{"--hostfile", "f", "-H", "a"},
		{"--plot", "x.svg"},
		{"--peer-timeout", "0s"},
		{"--bw-msg", "0"},
		{"extra"},
		{"--no-such-flag"},
	} {
		_, _, err := ParseArgs(bad)
		assert.Error(t, err, "%q", bad)
	}
	_, help, err = ParseArgs([]string{"--help"})
	require.NoError(t, err)
	assert.True(t, help)
}

// TestMeasureInProcess runs the measuring job's collective part over goroutine ranks and
// checks the events rank 0 emits.
func TestMeasureInProcess(t *testing.T) {
	var events []event
	err := comm.Run(3, func(c *comm.Comm) error {
		return measure(c, quick("inproc"), func(ev event) { events = append(events, ev) })
	})
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Equal(t, "facts", events[0].Kind)
	require.Len(t, events[0].Facts, 3)
	for r, f := range events[0].Facts {
		assert.Equal(t, r, f.Rank)
		assert.Equal(t, events[0].Facts[0].Build.ID, f.Build.ID, "one binary")
		assert.Positive(t, f.Cores)
		assert.GreaterOrEqual(t, f.ClockRTTUs, 0.0)
	}
	var pairs [][2]int
	for i, ev := range events[1:] {
		switch ev.Kind {
		case "pair":
			pairs = append(pairs, [2]int{ev.A, ev.B})
		case "link":
			l := ev.Link
			require.NotNil(t, l)
			assert.Equal(t, pairs[len(pairs)-1], [2]int{l.A, l.B}, "event %d: a link follows its pair", i+1)
			assert.Equal(t, "inproc", l.Transport)
			assert.Positive(t, l.LatUs)
			assert.LessOrEqual(t, l.LatMinUs, l.LatMedUs)
			assert.LessOrEqual(t, l.LatMinUs, l.LatUs)
			assert.Positive(t, l.BWAB)
			assert.Positive(t, l.BWBA)
			assert.GreaterOrEqual(t, l.BWABBest, l.BWAB)
			assert.GreaterOrEqual(t, l.BWBABest, l.BWBA)
			assert.Empty(t, l.Err)
		}
	}
	assert.Equal(t, [][2]int{{0, 1}, {0, 2}, {1, 2}}, pairs, "every pair once, in turn")
	assert.Equal(t, "done", events[len(events)-1].Kind)
}

func facts(host, build string, rows int) *Facts {
	return &Facts{Host: host, Build: Build{ID: build, GoVersion: "go1.26"}, Arch: "linux/amd64", Features: []string{"avx2"},
		Cores: 8, PanelRows: rows, Load1: 0.1, MemTotal: 64 << 30, MemAvailable: 60 << 30, THP: "madvise",
		NoFile: Limit{65536, 65536}, MemLock: Limit{-1, -1}, Shm: "/dev/shm"}
}

func link(a, b int, names []string, lat, ab, ba float64) Link {
	return Link{Transport: "tcp", A: a, B: b, HostA: names[a], HostB: names[b], LatUs: lat, LatMedUs: lat, LatMinUs: lat,
		BWAB: ab, BWBA: ba, BWABBest: ab, BWBABest: ba}
}

func flaggedLinks(r *Report) map[string]string {
	out := map[string]string{}
	for _, c := range r.Checks {
		if c.Name == "link" {
			out[c.Subject] = c.Verdict
		}
	}
	return out
}

func healthy(names []string) *Report {
	r := &Report{Mode: "hosts"}
	for _, n := range names {
		r.Hosts = append(r.Hosts, HostReport{Name: n, Reachable: true, Facts: facts(n, "abc/123", 24)})
	}
	r.Jobs = []JobReport{{Transport: "tcp", Complete: true}}
	return r
}

func TestAnalyzeLinks(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	all := func(r *Report, f func(i, j int) Link) {
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				r.Links = append(r.Links, f(i, j))
			}
		}
	}
	t.Run("healthy", func(t *testing.T) {
		r := healthy(names)
		all(r, func(i, j int) Link { return link(i, j, names, 20+float64(i), 1000+float64(10*j), 990) })
		r.analyze()
		assert.Empty(t, flaggedLinks(r))
		assert.Equal(t, OK, r.Verdict)
	})
	t.Run("a tenth", func(t *testing.T) {
		r := healthy(names)
		all(r, func(i, j int) Link {
			if i == 1 && j == 3 {
				return link(i, j, names, 22, 100, 95)
			}
			return link(i, j, names, 20, 1000, 1000)
		})
		r.analyze()
		assert.Equal(t, map[string]string{"tcp b-d": Fail}, flaggedLinks(r))
		assert.Equal(t, Fail, r.Verdict)
	})
	t.Run("asymmetric, lossy, slow to answer, failed", func(t *testing.T) {
		r := healthy(names)
		all(r, func(i, j int) Link {
			l := link(i, j, names, 20, 1000, 1000)
			switch {
			case i == 0 && j == 1:
				l.BWAB, l.BWABBest, l.BWBA, l.BWBABest = 1200, 1200, 380, 380
			case i == 0 && j == 2:
				l.Segs, l.Retrans = 10000, 500
			case i == 1 && j == 2:
				l.LatUs, l.LatMedUs, l.LatMinUs = 200, 200, 200
			case i == 2 && j == 3:
				l = Link{Transport: "tcp", A: i, B: j, HostA: "c", HostB: "d", Err: "the job ended"}
			}
			return l
		})
		r.analyze()
		assert.Equal(t, map[string]string{"tcp a-b": Warn, "tcp a-c": Warn, "tcp b-c": Warn, "tcp c-d": Fail}, flaggedLinks(r))
	})
	t.Run("two links are not compared", func(t *testing.T) {
		r := healthy(names[:3])
		r.Links = []Link{link(0, 1, names, 20, 1000, 1000), link(0, 2, names, 20, 10, 10)}
		r.analyze()
		assert.Empty(t, flaggedLinks(r))
	})
}

func TestAnalyzeHosts(t *testing.T) {
	r := healthy([]string{"a", "b", "c"})
	r.Hosts[2].Facts = facts("c", "abc/999", 8)
	r.Hosts[1].Facts.THP = "never"
	r.Hosts[1].Facts.Load1 = 9
	r.Hosts = append(r.Hosts, HostReport{Name: "d", Problem: "unreachable: no answer over ssh within 5s"})
	r.analyze()
	got := map[string]string{}
	for _, c := range r.Checks {
		got[c.Name+" "+c.Subject] = c.Verdict
		if c.Name == "build" {
			assert.Contains(t, c.Detail, "abc/123 (go1.26) on a,b; abc/999 (go1.26) on c")
		}
	}
	assert.Equal(t, map[string]string{"reach d": Fail, "build ": Fail, "kernels ": Warn, "hugepages b": Warn, "load b": Warn}, got)
	assert.Equal(t, Fail, r.Verdict)

	var buf bytes.Buffer
	require.NoError(t, r.WriteTable(&buf))
	assert.Regexp(t, `(?m)^d +unreachable: no answer over ssh within 5s$`, buf.String())
	assert.Contains(t, buf.String(), "FAIL  build: gorun builds differ")
	assert.Contains(t, buf.String(), "verdict: fail")
}

// TestProbe checks that a host whose ssh fails, or does not answer, is named in bounded time.
func TestProbe(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	refused := []string{"sh", "-c", "echo 'ssh: connect to host x port 22: Connection refused' >&2; exit 255", "ssh"}
	err = probe(context.Background(), refused, "x", self, 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unreachable: ssh: connect to host x port 22: Connection refused")

	silent := []string{"sh", "-c", "exec sleep 30", "ssh"}
	start := time.Now()
	err = probe(context.Background(), silent, "x", self, time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer over ssh within 1s")
	assert.Less(t, time.Since(start), 10*time.Second)

	// The fake ssh runs the command it is given here: the program is found, or not.
	local := []string{"sh", "-c", `while [ $# -gt 1 ]; do shift; done; exec sh -c "$1"`, "ssh"}
	require.NoError(t, probe(context.Background(), local, "x", self, 5*time.Second))
	err = probe(context.Background(), local, "x", filepath.Join(t.TempDir(), "nothing"), 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reachable, but no gorun at")
}

// TestLocalJobs runs gorun doctor -n 2 for real: two processes of this test binary as ranks,
// one job over shared memory and one over TCP, and checks the report and its JSON and plot.
func TestLocalJobs(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	o := &Options{NP: 2, Program: self, PeerTimeout: 10 * time.Second, Timeout: time.Minute, params: quick("")}
	var log bytes.Buffer
	rep, err := Run(context.Background(), o, func(string) (string, bool) { return "", false }, &log)
	require.NoError(t, err)
	require.Len(t, rep.Jobs, 2)
	for _, j := range rep.Jobs {
		assert.True(t, j.Complete, "%s job: %+v", j.Transport, j)
		assert.Zero(t, j.Code)
	}
	require.Len(t, rep.Hosts, 2)
	for _, h := range rep.Hosts {
		require.NotNil(t, h.Facts, h.Name)
	}
	var ts []string
	for _, l := range rep.Links {
		ts = append(ts, l.Transport)
		assert.Empty(t, l.Err)
		assert.Positive(t, l.LatUs)
		assert.Positive(t, l.BWAB)
		assert.Positive(t, l.BWBA)
		assert.Equal(t, rep.Hosts[0].Name, l.HostA)
	}
	assert.Equal(t, []string{"shm", "tcp"}, ts)
	assert.NotEqual(t, Fail, rep.Verdict, "%+v", rep.Checks)

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, rep.Links, back.Links)

	png := filepath.Join(t.TempDir(), "links.png")
	require.NoError(t, rep.Plot(png))
	head := make([]byte, 8)
	f, err := os.Open(png)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Read(head)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG\r\n\x1a\n", string(head))
}

// TestJobDiesMidway: a job whose rank 1 is not a doctor rank (exits at once) leaves the report
// with a failed job, not a hang or a panic.
func TestJobDiesMidway(t *testing.T) {
	job := &launcher.Job{NP: 2, Program: "/bin/sh", PeerTimeout: 5 * time.Second, Timeout: 30 * time.Second, StdinRank: -1}
	res := runJob(context.Background(), job, quick("tcp"))
	// /bin/sh reads "doctor" as a script name and fails: no events at all.
	assert.False(t, res.Complete)
	assert.NotZero(t, res.Code)
	r := &Report{Hosts: []HostReport{{Name: "x#0", Reachable: true}, {Name: "x#1", Reachable: true}}}
	r.addJob("tcp", res)
	r.analyze()
	assert.Equal(t, Fail, r.Verdict)
	found := false
	for _, c := range r.Checks {
		found = found || (c.Name == "job" && strings.Contains(c.Detail, fmt.Sprintf("code %d", res.Code)))
	}
	assert.True(t, found, "%+v", r.Checks)
}

// TestPendingLink: a job that died during a pair's measurement reports that pair as failed.
func TestPendingLink(t *testing.T) {
	out := eventMark + `{"kind":"facts","facts":[{"rank":0,"host":"a"},{"rank":1,"host":"b"},{"rank":2,"host":"c"}]}` + "\n" +
		eventMark + `{"kind":"pair","a":0,"b":1}` + "\n" +
		eventMark + `{"kind":"link","link":{"transport":"tcp","a":0,"b":1,"latency_us":20,"bw_ab_mbps":900,"bw_ba_mbps":910}}` + "\n" +
		"some rank output\n" +
		eventMark + `{"kind":"pair","a":0,"b":2}` + "\n" +
		eventMark + "{not json\n"
	res := parseEvents(out, "tcp")
	res.Code = 255
	res.Error = "rank 2 on c is lost"
	r := &Report{Hosts: []HostReport{{Name: "a", Reachable: true}, {Name: "b", Reachable: true}, {Name: "c", Reachable: true}}}
	r.addJob("tcp", res)
	require.Len(t, r.Links, 2)
	assert.Equal(t, "b", r.Links[0].HostB)
	assert.Equal(t, Link{Transport: "tcp", A: 0, B: 2, HostA: "a", HostB: "c", Err: "rank 2 on c is lost"}, r.Links[1])
	require.NotNil(t, r.Hosts[2].Facts)
	assert.Equal(t, "c", r.Hosts[2].Facts.Host)
}

// TestRDMAFacts: a Thunderbolt port with link-local GIDs only is said so; an active port with a
// low locked-memory limit, and a device with no active port, are warned about.
func TestRDMAFacts(t *testing.T) {
	r := healthy([]string{"mac1", "mac2"})
	tb := comm.RDMADevice{Name: "rdma_en2", Transport: "InfiniBand", Ports: []comm.RDMAPort{{Num: 1, State: "PORT_ACTIVE", Active: true,
		LinkLayer: "Ethernet", MTU: 4096, GIDs: []comm.RDMAGID{{Index: 0, GID: "fe80::1c2b:3aff:fe4d:5e6f", Type: "RoCE v2", LinkLocal: true}}}}}
	down := comm.RDMADevice{Name: "rdma_en3", Ports: []comm.RDMAPort{{Num: 1, State: "PORT_DOWN"}}}
	soft := comm.RDMADevice{Name: "softibv", Soft: true, Ports: []comm.RDMAPort{{Num: 1, State: "PORT_ACTIVE", Active: true}}}
	r.Hosts[0].Facts.Verbs = true
	r.Hosts[0].Facts.RDMA = []comm.RDMADevice{tb, soft}
	r.Hosts[0].Facts.MemLock = Limit{8 << 20, 8 << 20}
	r.Hosts[1].Facts.Verbs = true
	r.Hosts[1].Facts.RDMA = []comm.RDMADevice{down, soft}
	r.analyze()
	got := map[string]string{}
	for _, c := range r.Checks {
		got[c.Name+" "+c.Subject] = c.Verdict
	}
	assert.Equal(t, Warn, got["memlock mac1"])
	assert.Equal(t, Warn, got["rdma mac2"])
	assert.NotContains(t, got, "rdma mac1")
	assert.False(t, r.allRDMA(), "mac2 has no active port")
	assert.Equal(t, "rdma_en2/1 PORT_ACTIVE Ethernet mtu 4096, GIDs: [0] fe80::1c2b:3aff:fe4d:5e6f RoCE v2 (link-local only: Thunderbolt before an IPv4 address; gorun pairs them)",
		rdmaSummary(r.Hosts[0].Facts))
	r.Hosts[1].Facts.RDMA = []comm.RDMADevice{tb}
	assert.True(t, r.allRDMA())
}

func TestCapped(t *testing.T) {
	head := &capped{max: 5}
	head.Write([]byte("abc"))
	n, err := head.Write([]byte("defgh"))
	require.NoError(t, err)
	assert.Equal(t, 5, n, "a full buffer still takes the write")
	assert.Equal(t, "abcde", head.String())
	tail := &capped{max: 5, keepTail: true}
	tail.Write([]byte("abc"))
	tail.Write([]byte("defgh"))
	assert.Equal(t, "defgh", tail.String())
}
