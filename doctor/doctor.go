// Package doctor is `gorun doctor`: a short job over a cluster's hosts that reports what each
// host is (gorun build, Go, OS and kernel, CPU and its vector features, memory, huge pages,
// limits, clock, transports and RDMA ports, the interface it would use), measures every pair
// of hosts over every transport between them (one-way latency, streaming bandwidth both ways,
// TCP retransmits), and judges the result: ok, warn or fail per check, with what to do.
//
// Hosts are probed over ssh first; those that do not answer within the peer timeout are named
// and the job runs over the others. The job's ranks are gorun itself (`gorun doctor --rank`),
// so a host whose gorun differs shows up as version skew. docs/doctor.md explains the report.
package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorun-hpc/gorun/comm/jobenv"
	"github.com/gorun-hpc/gorun/launcher"
)

// Options is gorun doctor's command line.
type Options struct {
	NP          int
	Hostfile    string
	HostList    string
	SSH         string
	SSHArgs     string
	Iface       string
	PeerTimeout time.Duration
	Timeout     time.Duration
	Program     string   // the executable the ranks run (a gorun); "" = this one
	Transports  []string // measured transports; nil = shm,tcp on one host, tcp (+verbs) across hosts
	JSON        bool
	Plot        string
	NoSrun      bool
	params      params
}

const usageHead = `gorun doctor checks a cluster before a job finds out what is wrong with it.

Usage: gorun doctor [-n N]                      ranks on this host (default 2): shm and tcp
       gorun doctor --hostfile FILE | -H h1,h2  one rank per host, every pair of hosts
       gorun doctor                             inside a Slurm allocation: one task per node

It reports per host: gorun build, Go version, OS and kernel, CPU model and vector features,
cores, memory, transparent huge pages, open-file and locked-memory limits, clock offset from
rank 0, shared memory, RDMA devices (port state, link layer, MTU, GIDs) and the interface the
ranks would use; per pair of hosts and transport: one-way latency and bandwidth both ways.
Each check ends ok, warn or fail with what to do; the exit code is 1 when one fails.
Hosts are probed over ssh first; one that does not answer within --peer-timeout is named
and the others are still measured. gorun must be at the same path on every host (--program).

Flags:
`

func newFlagSet(o *Options, transports *string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gorun doctor", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.IntVarP(&o.NP, "np", "n", 0, "ranks on this host when no hosts are given (default 2)")
	fs.StringVar(&o.Hostfile, "hostfile", "", "check the hosts of `FILE` (gorun's hostfile formats; slots are ignored: one rank per host)")
	fs.StringVarP(&o.HostList, "host", "H", "", "check these hosts: `h1,h2,...`")
	fs.StringVar(&o.SSH, "ssh", "", "command that reaches a remote host (default: OMPI_MCA_plm_rsh_agent, else ssh)")
	fs.StringVar(&o.SSHArgs, "ssh-args", "", "extra ssh arguments (default: OMPI_MCA_plm_rsh_args)")
	fs.StringVar(&o.Iface, "iface", "", "network of the ranks' data and gorun's rendezvous: interface `NAME` or CIDR")
	fs.DurationVar(&o.PeerTimeout, "peer-timeout", 10*time.Second, "how long a host or a rank may stay silent before it is reported dead")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "limit for each measuring job")
	fs.StringVar(&o.Program, "program", "", "the gorun the ranks run, at the same `PATH` on every host (default: this executable)")
	fs.StringVar(transports, "transports", "", "transports to measure: a list of shm, tcp, verbs (default: shm,tcp on one host; tcp, and verbs where every host has an active RDMA port, across hosts)")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	fs.StringVar(&o.Plot, "plot", "", "also write the link matrix as a heat map to `FILE.png`")
	fs.BoolVar(&o.NoSrun, "no-srun", false, "inside a Slurm allocation, check this host rather than the allocation's nodes")
	fs.DurationVar(&o.params.latTime, "lat-time", o.params.latTime, "time spent on each pair's latency")
	fs.DurationVar(&o.params.bwTime, "bw-time", o.params.bwTime, "time spent on each pair's bandwidth, per direction")
	fs.IntVar(&o.params.bwMsg, "bw-msg", o.params.bwMsg, "message size of the bandwidth test, bytes")
	return fs
}

// Usage is gorun doctor's help text.
func Usage() string {
	o := Options{params: defaultParams()}
	var t string
	return usageHead + newFlagSet(&o, &t).FlagUsages()
}

// ParseArgs reads gorun doctor's command line (the words after "doctor").
func ParseArgs(args []string) (*Options, bool, error) {
	o := &Options{params: defaultParams()}
	var transports string
	fs := newFlagSet(o, &transports)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, true, nil
		}
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.Hostfile != "" && o.HostList != "" {
		return nil, false, errors.New("--hostfile and -H exclude each other")
	}
	if fs.Changed("np") && (o.Hostfile != "" || o.HostList != "") {
		return nil, false, errors.New("-n is for ranks on this host; with hosts, doctor runs one rank per host")
	}
	if fs.Changed("np") && (o.NP < 1 || o.NP > 64) {
		return nil, false, fmt.Errorf("-n %d: want 1 to 64 ranks", o.NP)
	}
	if o.PeerTimeout <= 0 || o.Timeout <= 0 {
		return nil, false, errors.New("--peer-timeout and --timeout must be positive")
	}
	p := o.params
	if p.latTime <= 0 || p.latTime > time.Minute || p.bwTime <= 0 || p.bwTime > time.Minute {
		return nil, false, errors.New("--lat-time and --bw-time must be between 0 and 1m")
	}
	if p.bwMsg < 1 || p.bwMsg > 16<<20 {
		return nil, false, fmt.Errorf("--bw-msg %d: want 1 to 16M bytes (a window is 64 messages)", p.bwMsg)
	}
	if transports != "" {
		for _, t := range strings.Split(transports, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains([]string{"shm", "tcp", "verbs"}, t) {
				return nil, false, fmt.Errorf("--transports: %q is not shm, tcp or verbs", t)
			}
			if !slices.Contains(o.Transports, t) {
				o.Transports = append(o.Transports, t)
			}
		}
	}
	if o.Plot != "" && !strings.HasSuffix(strings.ToLower(o.Plot), ".png") {
		return nil, false, fmt.Errorf("--plot %s: the file name must end in .png", o.Plot)
	}
	return o, false, nil
}

// Main is `gorun doctor ARGS...`; it returns the exit code: 0 when no check failed, 1 when one
// did, 2 on a usage error. `gorun doctor --rank` is one rank of the measuring job.
func Main(args []string, stdout, stderr io.Writer) int {
	if slices.Contains(args, "--rank") {
		return rankMain(args, stdout, stderr)
	}
	o, help, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "gorun doctor: %v\nRun 'gorun doctor --help' for usage.\n", err)
		return launcher.ExitUsage
	}
	if help {
		io.WriteString(stdout, Usage())
		return 0
	}
	// Ctrl-C or SIGTERM ends the measuring job as gorun ends one (SIGTERM to every rank).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	rep, err := Run(ctx, o, os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gorun doctor: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return launcher.ExitUsage
		}
		return launcher.ExitFailure
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return launcher.ExitFailure
		}
	} else {
		rep.WriteTable(stdout)
	}
	if o.Plot != "" {
		if err := rep.Plot(o.Plot); err != nil {
			fmt.Fprintf(stderr, "gorun doctor: --plot: %v\n", err)
			return launcher.ExitFailure
		}
	}
	if rep.Verdict == Fail {
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Run checks the hosts o names (or this host, or the Slurm allocation) and returns the report.
// Progress notes go to log.
func Run(ctx context.Context, o *Options, environ func(string) (string, bool), log io.Writer) (*Report, error) {
	start := time.Now()
	exe := o.Program
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding this executable (use --program): %w", err)
		}
		if s, err := filepath.EvalSymlinks(self); err == nil {
			self = s
		}
		exe = self
	} else if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	hosts, err := hostsOf(o, environ)
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	rep := &Report{}
	p := o.params
	switch {
	case hosts != nil:
		err = runHosts(ctx, o, exe, hosts, environ, p, rep, log)
	case inAllocation(o, environ):
		err = runSlurm(ctx, o, exe, environ, p, rep, log)
	default:
		np := o.NP
		if np == 0 {
			np = 2
		}
		rep.Mode = "local"
		ts := o.Transports
		if ts == nil {
			ts = []string{"shm", "tcp"}
		}
		name, _ := os.Hostname()
		for r := range np {
			rep.Hosts = append(rep.Hosts, HostReport{Name: fmt.Sprintf("%s#%d", name, r), Reachable: true})
		}
		for _, t := range ts {
			job := &launcher.Job{NP: np, Program: exe, Transport: t, PeerTimeout: o.PeerTimeout, Timeout: o.Timeout, StdinRank: -1}
			if t == "verbs" {
				job.Export = append(job.Export, jobenv.RDMADevice+"=softibv") // one host: the software device
			}
			rep.addJob(t, runJob(ctx, job, p.withLabel(t)))
		}
	}
	if err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.analyze()
	return rep, nil
}

func (p params) withLabel(t string) params {
	p.label = t
	return p
}

// hostsOf reads the hosts of --hostfile or -H (nil when neither is given).
func hostsOf(o *Options, environ func(string) (string, bool)) ([]launcher.Host, error) {
	switch {
	case o.HostList != "":
		return launcher.ParseHostList(o.HostList)
	case o.Hostfile != "":
		f, err := os.Open(o.Hostfile)
		if err != nil {
			return nil, fmt.Errorf("hostfile: %w", err)
		}
		defer f.Close()
		return launcher.ParseHostfile(f, o.Hostfile)
	}
	return nil, nil
}

// sshWords is the ssh command line gorun uses, from the flags or Open MPI's variables.
func sshWords(o *Options, environ func(string) (string, bool)) ([]string, error) {
	agent, args := o.SSH, o.SSHArgs
	if agent == "" {
		a, _ := environ("OMPI_MCA_plm_rsh_agent")
		agent, _, _ = strings.Cut(a, ":")
		agent = strings.TrimSpace(agent)
	}
	if agent == "" {
		agent = "ssh"
	}
	if args == "" {
		args, _ = environ("OMPI_MCA_plm_rsh_args")
	}
	return launcher.SplitShellWords(agent + " " + args)
}

// runHosts probes every host, then runs one measuring job per transport over those that
// answered, one rank per host.
func runHosts(ctx context.Context, o *Options, exe string, hosts []launcher.Host, environ func(string) (string, bool), p params, rep *Report, log io.Writer) error {
	rep.Mode = "hosts"
	ssh, err := sshWords(o, environ)
	if err != nil {
		return &usageError{fmt.Sprintf("ssh command: %v", err)}
	}
	probes := probeHosts(ctx, ssh, hosts, exe, o.PeerTimeout)
	var live []launcher.Host
	for i, h := range hosts {
		hr := HostReport{Name: h.Name, Reachable: probes[i] == nil}
		if probes[i] != nil {
			hr.Problem = probes[i].Error()
			fmt.Fprintf(log, "gorun doctor: %s: %v\n", h.Name, probes[i])
		} else {
			live = append(live, launcher.Host{Name: h.Name, Slots: 1})
		}
		rep.Hosts = append(rep.Hosts, hr)
	}
	if len(live) == 0 {
		return nil
	}
	ts := o.Transports
	if ts == nil {
		ts = []string{"tcp"}
	}
	job := func(t string) *launcher.Job {
		return &launcher.Job{NP: len(live), Hosts: live, SSH: ssh, Iface: o.Iface, Program: exe, Transport: t,
			PeerTimeout: o.PeerTimeout, Timeout: o.Timeout, StdinRank: -1}
	}
	for _, t := range ts {
		if t == "shm" {
			continue // one rank per host: no pair shares memory
		}
		rep.addJob(t, runJob(ctx, job(t), p.withLabel(t)))
		if o.Transports == nil && t == "tcp" && len(live) > 1 && rep.allRDMA() {
			rep.addJob("verbs", runJob(ctx, job("verbs"), p.withLabel("verbs")))
		}
	}
	return nil
}

// probeHosts checks, all at once, that each host answers ssh within timeout and has exe; a
// host that is this machine is checked here. The result holds nil for a good host.
func probeHosts(ctx context.Context, ssh []string, hosts []launcher.Host, exe string, timeout time.Duration) []error {
	out := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if isLocal(h.Name) {
				if st, err := os.Stat(exe); err != nil || !st.Mode().IsRegular() {
					out[i] = fmt.Errorf("no gorun at %s on this host", exe)
				}
				return
			}
			out[i] = probe(ctx, ssh, h.Name, exe, timeout)
		}()
	}
	wg.Wait()
	return out
}

// isLocal reports whether name is this machine (gorun starts its ranks without ssh): a name or
// address that resolves to one of its addresses.
func isLocal(name string) bool {
	if name == "localhost" {
		return true
	}
	if hn, err := os.Hostname(); err == nil && (name == hn || strings.SplitN(hn, ".", 2)[0] == name) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, name)
	if err != nil {
		return false
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IP.IsLoopback() {
			return true
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip.IP) {
				return true
			}
		}
	}
	return false
}

// Report is gorun doctor's result.
type Report struct {
	Mode    string       `json:"mode"` // "local", "hosts" or "slurm"
	Hosts   []HostReport `json:"hosts"`
	Jobs    []JobReport  `json:"jobs"`
	Links   []Link       `json:"links"`
	Checks  []Check      `json:"checks"`
	Verdict string       `json:"verdict"` // the worst check's
	Seconds float64      `json:"seconds"`
}

// HostReport is one host (in local mode, one rank of this host).
type HostReport struct {
	Name      string `json:"name"`
	Reachable bool   `json:"reachable"`
	Problem   string `json:"problem,omitempty"`
	Facts     *Facts `json:"facts,omitempty"`
}

// JobReport is one measuring job (one per transport).
type JobReport struct {
	Transport string  `json:"transport"`
	Code      int     `json:"exit_code"`
	Error     string  `json:"error,omitempty"`
	Complete  bool    `json:"complete"`
	Seconds   float64 `json:"seconds"`
	Stderr    string  `json:"stderr,omitempty"` // the job's last lines of stderr when it failed
}

// jobResult is what a measuring job produced.
type jobResult struct {
	JobReport
	facts   []Facts
	links   []Link
	pending *event // the pair under way when the job ended early
}

// runJob runs one measuring job and reads rank 0's events from its output.
func runJob(ctx context.Context, job *launcher.Job, p params) jobResult {
	out, errb := &capped{max: maxEvents}, &capped{max: maxStderr, keepTail: true}
	job.Args = p.args()
	job.Stdout, job.Stderr = out, errb
	job.KillGrace = time.Second
	start := time.Now()
	code, err := job.Run(ctx)
	res := parseEvents(out.String(), p.label)
	res.Code, res.Seconds = code, time.Since(start).Seconds()
	if err != nil {
		res.Error = err.Error()
	}
	if code != 0 || !res.Complete {
		res.Stderr = tail(errb.String(), 12)
	}
	return res
}

// Bounds on what gorun doctor keeps of a job's output: rank 0's events (a few KiB a host), and
// the end of its stderr for the report.
const (
	maxEvents = 16 << 20
	maxStderr = 64 << 10
)

// capped is a buffer of at most max bytes: the first max, or with keepTail the last max.
type capped struct {
	buf      bytes.Buffer
	max      int
	keepTail bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if !c.keepTail {
		if room := c.max - c.buf.Len(); room < len(p) {
			p = p[:max(room, 0)]
		}
		c.buf.Write(p)
		return n, nil
	}
	c.buf.Write(p)
	if extra := c.buf.Len() - c.max; extra > 0 {
		c.buf.Next(extra)
	}
	return n, nil
}

func (c *capped) String() string { return c.buf.String() }

// parseEvents reads rank 0's events from the job's output.
func parseEvents(out, transport string) jobResult {
	res := jobResult{JobReport: JobReport{Transport: transport}}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, eventMark)
		if !ok {
			continue
		}
		var ev event
		if json.Unmarshal([]byte(rest), &ev) != nil {
			continue
		}
		switch ev.Kind {
		case "facts":
			res.facts = ev.Facts
		case "pair":
			res.pending = &ev
		case "link":
			if ev.Link != nil {
				res.links = append(res.links, *ev.Link)
			}
			res.pending = nil
		case "done":
			res.Complete = true
		}
	}
	return res
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// addJob records a job's outcome: its facts (the first job's), its links, and a link that was
// being measured when the job died.
func (r *Report) addJob(t string, res jobResult) {
	live := r.liveNames()
	name := func(rank int) string {
		if rank >= 0 && rank < len(live) {
			return live[rank]
		}
		return "rank " + strconv.Itoa(rank)
	}
	for _, f := range res.facts {
		if f.Rank < len(live) {
			for i := range r.Hosts {
				if r.Hosts[i].Name == live[f.Rank] && r.Hosts[i].Facts == nil {
					fc := f
					r.Hosts[i].Facts = &fc
				}
			}
		}
	}
	for _, l := range res.links {
		l.HostA, l.HostB = name(l.A), name(l.B)
		r.Links = append(r.Links, l)
	}
	if res.pending != nil {
		why := res.Error
		if why == "" {
			why = fmt.Sprintf("the job ended with code %d during this measurement", res.Code)
		}
		r.Links = append(r.Links, Link{Transport: t, A: res.pending.A, B: res.pending.B, HostA: name(res.pending.A), HostB: name(res.pending.B), Err: why})
	}
	r.Jobs = append(r.Jobs, res.JobReport)
}

// liveNames are the names of the hosts the jobs ran on, in rank order.
func (r *Report) liveNames() []string {
	var out []string
	for _, h := range r.Hosts {
		if h.Reachable {
			out = append(out, h.Name)
		}
	}
	return out
}

// allRDMA reports whether every measured host has a hardware RDMA device with an active port
// that its gorun can use.
func (r *Report) allRDMA() bool {
	n := 0
	for _, h := range r.Hosts {
		if !h.Reachable {
			continue
		}
		if h.Facts == nil || !h.Facts.Verbs || !hasActivePort(h.Facts) {
			return false
		}
		n++
	}
	return n > 1
}

func hasActivePort(f *Facts) bool {
	for _, d := range f.RDMA {
		if d.Soft {
			continue
		}
		for _, p := range d.Ports {
			if p.Active {
				return true
			}
		}
	}
	return false
}
