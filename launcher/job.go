package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/comm/bootstrap"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// Exit codes of gorun besides those it passes on from a rank.
const (
	ExitFailure = 1   // gorun could not start the job (a rank failed to start, a build failed)
	ExitUsage   = 2   // bad command line or unknown program
	ExitTimeout = 124 // --timeout expired (as coreutils timeout)
)

// DefaultKillGrace is how long ranks get between SIGTERM and SIGKILL when a job is torn down.
const DefaultKillGrace = 2 * time.Second

// drainTimeout bounds how long gorun waits, after a rank exits, for more of its output when none
// comes: a process that left the rank's process group may hold the pipe open forever.
const drainTimeout = time.Second

// Job describes one run of PROGRAM as NP ranks on this host.
type Job struct {
	NP      int      // number of ranks, > 0
	Program string   // executable file (already resolved, see Resolver)
	Args    []string // arguments after PROGRAM
	Dir     string   // working directory of the ranks; "" = gorun's

	// Env is the environment every rank starts from; nil = gorun's own (os.Environ()).
	Env []string
	// Export holds NAME=value pairs (from -x) set for every rank over Env.
	Export []string

	TagOutput   bool          // prefix each output line with TagFor(rank)
	Timeout     time.Duration // whole-job limit; 0 = none
	PeerTimeout time.Duration // written to GORUN_PEER_TIMEOUT when > 0
	Transport   string        // written to GORUN_TRANSPORT when set: one of jobenv.Transports
	KillGrace   time.Duration // SIGTERM to SIGKILL delay on teardown; 0 = DefaultKillGrace, < 0 = none

	// StdinRank is the rank that receives Stdin; the others, and all ranks when StdinRank < 0
	// or Stdin is nil, read /dev/null.
	StdinRank int
	Stdin     io.Reader
	// IdleFlush, when > 0, forwards an unfinished line of the StdinRank after this much quiet,
	// so an interactive prompt appears before its newline. Other ranks' lines are only ever
	// forwarded whole (or in maxLine pieces), so a rank that stalls mid-line under load can
	// never have its line broken by another's. Main sets it when stdin is a terminal.
	IdleFlush time.Duration
	Stdout    io.Writer // forwarded stdout of all ranks; nil = discard
	Stderr    io.Writer // forwarded stderr of all ranks and gorun's own messages; nil = discard

	// Hosts, when set, are the machines the ranks run on (see Map); a host that is not this
	// machine gets its ranks over ssh. nil = every rank on this host.
	Hosts         []Host
	MapByNode     bool     // place ranks round-robin over the hosts instead of filling each in turn
	Oversubscribe bool     // allow more ranks than slots
	SSH           []string // ssh command and arguments for remote hosts; nil = ["ssh"]
	// Iface picks the network (interface name or CIDR) the ranks' data plane and gorun's
	// rendezvous use; written to GORUN_IFACE.
	Iface string

	// Signals delivers signals received by gorun: SIGINT, SIGTERM and SIGHUP tear the job down
	// (SIGTERM to every rank, SIGKILL after KillGrace, at once on a second signal); SIGQUIT,
	// SIGUSR1 and SIGUSR2 are passed to every rank as they are.
	Signals <-chan os.Signal
}

// Identity is what the launcher generates once per job and hands to every rank.
type Identity struct {
	ID     string // 8 random bytes, hex
	Secret string // 32 random bytes, hex
	Coord  string // host:port where gorun serves the rendezvous
}

// newIdentity draws a job id and secret from crypto/rand and opens the rendezvous listener on
// coordHost, which gorun holds and serves itself (comm/bootstrap.ServeRendezvous) for the whole job: no
// port is picked, closed and bound again, so no other process can take it in between.
func newIdentity(coordHost string) (Identity, net.Listener, error) {
	id, err := newJobSecret()
	if err != nil {
		return Identity{}, nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(coordHost, "0"))
	if err != nil {
		return Identity{}, nil, fmt.Errorf("rendezvous listener on %s: %w", coordHost, err)
	}
	id.Coord = ln.Addr().String()
	return id, ln, nil
}

// newJobSecret draws a job id and secret.
func newJobSecret() (Identity, error) {
	var id [8]byte
	var secret [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Identity{}, err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return Identity{}, err
	}
	return Identity{ID: hex.EncodeToString(id[:]), Secret: hex.EncodeToString(secret[:])}, nil
}

// Placement says where one rank runs.
type Placement struct {
	Rank, LocalRank, LocalSize int
	Host                       string // "" = this host
	// Oversubscribed says the host's ranks outnumber its cores (see markOversubscribed).
	Oversubscribed bool
	// Procs is the rank's share of its host's cores when it shares the host with other ranks
	// (the cores over the host's ranks, at least 1), its GOMAXPROCS; 0 for a rank alone on its
	// host (see shareCores).
	Procs int
}

// placeLocal puts all np ranks on this host.
func placeLocal(np int) []Placement {
	p := make([]Placement, np)
	for i := range p {
		p[i] = Placement{Rank: i, LocalRank: i, LocalSize: np}
	}
	return p
}

// placements maps the ranks onto the job's hosts; ranks on this machine get Host "".
func (j *Job) placements() ([]Placement, error) {
	if len(j.Hosts) == 0 {
		return placeLocal(j.NP), nil
	}
	p, err := Map(j.Hosts, j.NP, j.MapByNode, j.Oversubscribe)
	if err != nil {
		return nil, err
	}
	local := map[string]bool{}
	for _, h := range j.Hosts {
		local[h.Name] = isLocalHost(h.Name)
	}
	for i := range p {
		if local[p[i].Host] {
			p[i].Host = ""
		}
	}
	return p, nil
}

// coordHost is the address gorun serves the rendezvous on: loopback when every rank is local,
// else its address on --iface, else the address this machine reaches the first remote host from.
func (j *Job) coordHost(places []Placement) (string, error) {
	remote := ""
	for _, p := range places {
		if p.Host != "" {
			remote = p.Host
			break
		}
	}
	if remote == "" {
		return "127.0.0.1", nil
	}
	if j.Iface != "" {
		ip, err := jobenv.IfaceAddr(j.Iface)
		if err != nil {
			return "", fmt.Errorf("--iface %s on this host: %w", j.Iface, err)
		}
		return ip.String(), nil
	}
	// A UDP "connection" sends nothing: it only asks the kernel for the route's source address.
	c, err := net.Dial("udp", net.JoinHostPort(remote, "9"))
	if err == nil {
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
	}
	// No route (yet): the host's first global address, which ssh's own route may still reach.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no route from this host to %s (%v) and no global address to serve the rendezvous on; use --iface", remote, err)
}

// RankEnv returns the environment of one rank: base, then the -x exports, then the bootstrap
// contract of package jobenv (later entries win, as exec.Cmd applies them).
func (j *Job) RankEnv(base []string, id Identity, p Placement, np int) []string {
	exports := j.rankExports(base, p)
	env := make([]string, 0, len(base)+len(exports)+8)
	env = append(env, base...)
	env = append(env, exports...)
	env = append(env,
		jobenv.Rank+"="+strconv.Itoa(p.Rank),
		jobenv.Size+"="+strconv.Itoa(np),
		jobenv.LocalRank+"="+strconv.Itoa(p.LocalRank),
		jobenv.LocalSize+"="+strconv.Itoa(p.LocalSize),
		jobenv.Coord+"="+id.Coord,
		jobenv.CoordByLauncher+"=1",
		jobenv.JobID+"="+id.ID,
		jobenv.Secret+"="+id.Secret,
	)
	if p.Oversubscribed {
		env = append(env, jobenv.Oversubscribed+"=1")
	}
	return append(env, settingsEnv(j.PeerTimeout, j.Transport, j.Iface)...)
}

// rankExports are the variables set for rank p over base: the -x exports and, for a rank that
// shares its host, GOMAXPROCS set to its share of the cores (p.Procs). Each rank then runs
// as many Go processors as it has cores, as an MPI rank bound to its cores runs (Open MPI
// binds a rank per core up to two ranks) and as torchrun sets OMP_NUM_THREADS: a runtime
// with more processors than its share wakes idle ones to look for work, on cores that the
// other ranks, and a waiting rank's peer, need. A -x export of GOMAXPROCS wins, and so, for
// a rank on this host, does GOMAXPROCS in base (a remote rank gets none of base but the
// exports).
func (j *Job) rankExports(base []string, p Placement) []string {
	if p.Procs <= 0 || hasEnv(j.Export, "GOMAXPROCS") || p.Host == "" && hasEnv(base, "GOMAXPROCS") {
		return j.Export
	}
	return append(slices.Clip(j.Export), "GOMAXPROCS="+strconv.Itoa(p.Procs))
}

// hasEnv tells whether env (KEY=VALUE entries, or a bare KEY) sets key.
func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if e == key || strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// settingsEnv is the part of the contract that gorun's flags set for the whole job, written
// only when set so that a rank's defaults apply otherwise.
func settingsEnv(peerTimeout time.Duration, transport, iface string) []string {
	var env []string
	if peerTimeout > 0 {
		env = append(env, jobenv.PeerTimeout+"="+peerTimeout.String())
	}
	if transport != "" {
		env = append(env, jobenv.Transport+"="+transport)
	}
	if iface != "" {
		env = append(env, jobenv.Iface+"="+iface)
	}
	return env
}

// rankProc is one started rank: the rank's process, or for a remote rank the ssh that runs it.
type rankProc struct {
	rank int
	cmd  *exec.Cmd
	pid  int
	host string         // remote host; "" = this one
	ctl  *remoteControl // a remote rank's signal channel

	mu     sync.Mutex
	exited bool // set, under mu, before the rank is reaped: its group may no longer be signalled

	readers sync.WaitGroup // stdout and stderr pumps
	pipes   []*os.File     // read ends, closed when draining gives up
	idle    []atomic.Int64 // per pipe: since when (unix ns) its pump waits for data; 0 = busy
	fwds    []*lineForwarder
	losses  *lossReports // peers its output reported lost
	stdin   io.WriteCloser
	watched bool // its exit is noticed by the exitOrder watcher, not by its waiter

	// Owned by the supervisor loop:
	seq  int  // position in the order of exits (-1: not noticed yet)
	done bool // reaped, output drained
}

// remoteKillDelay is how long a remote rank's ssh may take to report the rank killed before
// gorun kills the ssh itself (its host may be unreachable).
const remoteKillDelay = 3 * time.Second

// signalGroup sends sig to the rank's process group unless the rank was already reaped. A
// remote rank gets it through its ssh session.
func (r *rankProc) signalGroup(sig syscall.Signal) {
	if r.ctl != nil {
		r.ctl.send(sig)
		if sig == syscall.SIGKILL {
			time.AfterFunc(remoteKillDelay, func() { r.signalLocal(-r.pid, syscall.SIGKILL) })
		}
		return
	}
	r.signalLocal(-r.pid, sig)
}

// signalLeader sends sig to the rank process alone (not its children).
func (r *rankProc) signalLeader(sig syscall.Signal) {
	if r.ctl != nil {
		r.ctl.send(sig)
		return
	}
	r.signalLocal(r.pid, sig)
}

func (r *rankProc) signalLocal(pid int, sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.exited {
		_ = syscall.Kill(pid, sig)
	}
}

// status is the exit status a remote rank's script reported (-1: none, or a local rank).
func (r *rankProc) status() int {
	if r.host == "" {
		return -1
	}
	return r.fwds[1].exitStatus()
}

// name is how messages refer to the rank.
func (r *rankProc) name() string {
	if r.host != "" {
		return fmt.Sprintf("rank %d on %s", r.rank, r.host)
	}
	return fmt.Sprintf("rank %d (pid %d)", r.rank, r.pid)
}

// shortName is how a message already naming the rank refers to it again.
func (r *rankProc) shortName() string {
	if r.host != "" {
		return fmt.Sprintf("rank %d on %s", r.rank, r.host)
	}
	return fmt.Sprintf("rank %d", r.rank)
}

// exitEvent reports a rank reaped and its output drained.
type exitEvent struct {
	r     *rankProc
	state *os.ProcessState
	err   error
	// reportedBy, set for a rank that has not exited, is the failed rank that reported losing
	// it (see supervisor.reportedLost); state is then nil.
	reportedBy *rankProc
}

// Blame timing. When one rank dies its peers often fail at once on the lost connection; the
// rank that exited first, not the one whose report arrived first, is the cause. Exits are
// numbered in the order the kernel saw them (exitOrder); once a failure is reported gorun waits
// until every rank known to have exited, and every peer a failed rank reported lost, is
// accounted for, at most maxSettle.
const (
	settle    = 20 * time.Millisecond
	maxSettle = 2 * time.Second
)

// Run starts the job's ranks, forwards their output, stdin and signals, and waits for all of
// them. It returns the exit code gorun should exit with: 0 when every rank exited 0; the highest
// code of the ranks that failed together (128+signal for a rank killed by a signal; 255 for a
// remote rank whose ssh failed), after tearing down the others; ExitTimeout when Timeout expired; 128+signal when gorun was interrupted. The error is
// non-nil when the job could not be started (the code is then ExitFailure). Messages about the
// job go to Stderr prefixed with "gorun: ".
func (j *Job) Run(ctx context.Context) (int, error) {
	if j.NP <= 0 {
		return ExitUsage, fmt.Errorf("number of ranks must be positive, got %d", j.NP)
	}
	places, err := j.placements()
	if err != nil {
		return ExitUsage, err
	}
	if err := checkOpenFiles(places); err != nil {
		return ExitFailure, err
	}
	cores := localCores()
	crowded := markOversubscribed(places, j.Hosts, cores)
	shareCores(places, j.Hosts, localProcs())
	coordHost, err := j.coordHost(places)
	if err != nil {
		return ExitFailure, err
	}
	id, coordLn, err := newIdentity(coordHost)
	if err != nil {
		return ExitFailure, err
	}
	defer coordLn.Close()
	base := j.Env
	if base == nil {
		base = os.Environ()
	}
	outMu := new(sync.Mutex)
	stdout, stderr := newSink(outMu, j.Stdout), newSink(outMu, j.Stderr)
	s := &supervisor{
		job:     j,
		stderr:  stderr,
		exits:   make(chan exitEvent, j.NP),
		notices: make(chan int, j.NP),
	}
	s.grace = j.killGrace()
	if crowded > 0 && !j.Oversubscribe {
		s.logf("warning: %d ranks on this host's %d %s: oversubscribed, the ranks take turns on them (--oversubscribe silences this)", crowded, cores, plural(cores, "core", "cores"))
	}
	order := newExitOrder(s.notices)
	defer order.stop()
	stopServing := make(chan struct{})
	defer close(stopServing)
	go func() {
		err := bootstrap.ServeRendezvous(coordLn, j.NP, id.ID, id.Secret, j.PeerTimeout, stopServing)
		select {
		case <-stopServing:
			return
		default:
		}
		// It times out only once some rank came (a program that does not use comm, or a job of
		// one rank, never registers); the ranks that came report it too, this names the others.
		if err != nil {
			s.logf("%v", err)
		}
	}()

	for _, p := range places {
		r, err := j.start(p, j.RankEnv(base, id, p, j.NP), id, stdout, stderr, order, s.exits, s.notices)
		if err != nil {
			// Take down what already runs; they cannot form the job without this rank.
			for _, q := range s.procs {
				q.signalGroup(syscall.SIGKILL)
			}
			for range s.procs {
				<-s.exits
			}
			where := ""
			if p.Host != "" {
				where = " on " + p.Host
			}
			return ExitFailure, fmt.Errorf("start rank %d%s (%s): %w", p.Rank, where, j.Program, err)
		}
		s.procs = append(s.procs, r)
	}
	// Ranks unlink their shared-memory segments once all have mapped them; a rank killed in
	// the moment between leaves its segment behind, which the job's end removes.
	defer removeSegments(id.ID)
	return s.loop(ctx), nil
}

// killGrace is the delay between SIGTERM and SIGKILL on teardown.
func (j *Job) killGrace() time.Duration {
	if j.KillGrace == 0 {
		return DefaultKillGrace
	}
	return max(j.KillGrace, 0)
}

// removeSegments deletes what is left of a job's shared-memory segments.
func removeSegments(jobID string) {
	matches, _ := filepath.Glob(filepath.Join(jobenv.SegmentDir(), jobenv.SegmentPrefix(jobID)+"*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// supervisor follows a started job to its end.
type supervisor struct {
	job     *Job
	stderr  *sink
	procs   []*rankProc
	exits   chan exitEvent
	notices chan int // ranks in the order they exited
	grace   time.Duration

	code        int
	running     int
	nextSeq     int
	terminating bool
	interrupts  int
	graceC      <-chan time.Time

	failures     []exitEvent // reported failures not yet judged
	firstFailure time.Time
	settleC      <-chan time.Time
}

func (s *supervisor) logf(format string, args ...any) {
	s.stderr.emit(nil, []byte("gorun: "+fmt.Sprintf(format, args...)+"\n"))
}

func (s *supervisor) ranks(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "rank", "ranks")) }

func (s *supervisor) loop(ctx context.Context) int {
	j := s.job
	s.running = len(s.procs)
	for _, r := range s.procs {
		r.seq = -1
	}
	var timeoutC <-chan time.Time
	if j.Timeout > 0 {
		t := time.NewTimer(j.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	ctxDone := ctx.Done()
	for s.running > 0 {
		select {
		case rank := <-s.notices:
			if r := s.procs[rank]; r.seq < 0 {
				r.seq = s.nextSeq
				s.nextSeq++
			}
		case ev := <-s.exits:
			s.running--
			ev.r.done = true
			if ev.err != nil {
				s.logf("%s: wait: %v", ev.r.name(), ev.err)
			}
			if _, failed, _ := ev.describe(); failed && !s.terminating {
				if len(s.failures) == 0 {
					s.firstFailure = time.Now()
					s.settleC = time.After(settle)
				}
				s.failures = append(s.failures, ev)
			}
		case <-s.settleC:
			s.blame(false)
		case sig := <-j.Signals:
			sn, _ := sig.(syscall.Signal)
			switch sn {
			case syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2:
				for _, r := range s.procs {
					r.signalLeader(sn)
				}
				continue
			}
			s.blame(true) // a rank that failed before the signal keeps the blame
			s.interrupts++
			if s.interrupts > 1 {
				s.logf("received %v again; killing %s", sig, s.ranks(s.running))
				s.killAll()
				continue
			}
			if !s.terminating {
				s.code = 128 + int(sn)
				s.logf("received %v; terminating %s", sig, s.ranks(s.running))
				s.terminate()
			}
		case <-timeoutC:
			s.blame(true)
			if !s.terminating {
				s.code = ExitTimeout
				s.logf("job timed out after %v; terminating %s", j.Timeout, s.ranks(s.running))
				s.terminate()
			}
		case <-ctxDone:
			ctxDone = nil
			s.blame(true)
			if !s.terminating {
				s.code = ExitFailure
				s.logf("%v; terminating %s", context.Cause(ctx), s.ranks(s.running))
				s.terminate()
			}
		case <-s.graceC:
			s.graceC = nil
			s.logf("%s still running %v after SIGTERM; sending SIGKILL", s.ranks(s.running), s.grace)
			s.killAll()
		}
	}
	// Order notices may still be on their way behind the last exit.
	if len(s.failures) > 0 {
		deadline := time.After(maxSettle)
		for s.nextSeq < len(s.procs) {
			select {
			case rank := <-s.notices:
				if r := s.procs[rank]; r.seq < 0 {
					r.seq = s.nextSeq
					s.nextSeq++
				}
				continue
			case <-deadline:
			}
			break
		}
	}
	s.blame(true)
	if lost := lostHosts(s.procs); len(lost) > 0 {
		s.logf("lost contact with %s: no exit status came over ssh; ranks still running there stop when they find their peers gone", strings.Join(lost, "; "))
		if s.code == 0 {
			s.code = sshFailed
		}
	}
	return s.code
}

// blame judges the reported failures and names the first to fail (see failureOrder); the
// others are listed as having failed after it. The highest code of those that failed together
// becomes the job's and the remaining ranks are terminated. Unless forced, it waits (up to
// maxSettle after the first report) while the order is not yet known, a rank known to have
// exited has not been reported, or a failed rank reported losing a peer that has not exited.
func (s *supervisor) blame(force bool) {
	s.settleC = nil
	if len(s.failures) == 0 || s.terminating {
		return
	}
	force = force || time.Since(s.firstFailure) >= maxSettle
	if !force && !s.settled() {
		s.settleC = time.After(settle)
		return
	}
	order := failureOrder(append(s.failures, s.reportedLost()...))
	ev := order[0]
	// The job's code is the highest of the ranks that failed together (DESIGN.md: as srun).
	code, _, how := ev.describe()
	var also []string
	for _, o := range order[1:] {
		oc, _, h := o.describe()
		also = append(also, o.r.name()+" "+h)
		code = max(code, oc)
	}
	s.failures = nil
	s.code = code
	if s.running == 0 {
		s.logf("%s %s", ev.r.name(), how)
		s.terminating = true
	} else if ev.reportedBy != nil {
		others := s.running - 1
		s.logf("%s %s; terminating it and %d other %s", ev.r.name(), how, others, plural(others, "rank", "ranks"))
		s.terminate()
	} else {
		s.logf("%s %s; terminating %d other %s", ev.r.name(), how, s.running, plural(s.running, "rank", "ranks"))
		s.terminate()
	}
	if len(also) > 0 {
		s.logf("also failed (after %s): %s", ev.r.shortName(), strings.Join(also, ", "))
	}
}

// settled tells whether the reported failures can be judged: the order of every failed rank
// is known, every rank known to have exited is reaped and drained (moments), so the list of
// those that failed together is complete, and no failed rank waits for a peer it reported lost.
func (s *supervisor) settled() bool {
	for _, ev := range s.failures {
		if ev.r.seq < 0 {
			return false
		}
	}
	for _, r := range s.procs {
		if r.seq >= 0 && !r.done {
			return false
		}
	}
	return !s.waitsForLost()
}

func (s *supervisor) terminate() {
	s.terminating = true
	for _, r := range s.procs {
		r.signalGroup(syscall.SIGTERM)
	}
	s.graceC = time.After(s.grace)
}

func (s *supervisor) killAll() {
	for _, r := range s.procs {
		r.signalGroup(syscall.SIGKILL)
	}
}

// start launches one rank and the goroutines that pump its output and wait for it.
func (j *Job) start(p Placement, env []string, id Identity, stdout, stderr *sink, order exitOrder, exits chan<- exitEvent, notices chan<- int) (*rankProc, error) {
	var cmd *exec.Cmd
	if p.Host == "" {
		cmd = exec.Command(j.Program, j.Args...)
		cmd.Env = env
		cmd.Dir = j.Dir
	} else {
		ssh := j.SSH
		if len(ssh) == 0 {
			ssh = []string{"ssh"}
		}
		script := remoteScript(workDir(j.Dir), j.Program, j.Args, remoteEnv(env, j.rankExports(nil, p)), statusMark(id.ID), j.killGrace())
		argv := sshCommand(ssh, p.Host, script)
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env = j.Env
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
	}
	cmd.SysProcAttr = sysProcAttr()
	r := &rankProc{rank: p.Rank, cmd: cmd, host: p.Host, losses: newLossReports(p.Rank, j.NP)}
	tag := ""
	if j.TagOutput {
		tag = TagFor(p.Rank)
	}

	var childEnds []*os.File
	closeAll := func() {
		for _, f := range childEnds {
			f.Close()
		}
		for _, f := range r.pipes {
			f.Close()
		}
	}
	for _, dst := range []*sink{stdout, stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		childEnds = append(childEnds, pw)
		r.pipes = append(r.pipes, pr)
		flush := time.Duration(0)
		if j.Stdin != nil && p.Rank == j.StdinRank {
			flush = j.IdleFlush
		}
		fw := newLineForwarder(dst, tag, flush)
		fw.losses = r.losses
		r.fwds = append(r.fwds, fw)
	}
	cmd.Stdout, cmd.Stderr = childEnds[0], childEnds[1]
	if p.Host != "" {
		r.fwds[1].mark = []byte(statusMark(id.ID))
		w, err := cmd.StdinPipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		r.ctl = &remoteControl{w: w}
	} else if j.Stdin != nil && p.Rank == j.StdinRank {
		w, err := cmd.StdinPipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		r.stdin = w
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, f := range childEnds {
		f.Close() // the rank holds its own copies; EOF comes when it and its children are gone
	}
	r.pid = cmd.Process.Pid
	r.watched = order.watch(p.Rank, r.pid, r.pipes)
	r.idle = make([]atomic.Int64, len(r.pipes))
	for i := range r.pipes {
		r.readers.Add(1)
		go func(src *os.File, fw *lineForwarder, idle *atomic.Int64) {
			defer r.readers.Done()
			pump(src, fw, idle)
		}(r.pipes[i], r.fwds[i], &r.idle[i])
	}
	if r.stdin != nil {
		go func() {
			// Ends when stdin ends or the rank stops reading; the read may stay blocked on a
			// terminal after the job is over, which is harmless in a process about to exit.
			_, _ = io.Copy(r.stdin, j.Stdin)
			r.stdin.Close()
		}()
	}
	go r.wait(exits, notices)
	return r, nil
}

// wait reports the rank's exit after killing what is left of its process group and forwarding
// the end of its output, so gorun's message about a failed rank comes after the rank's own last
// words.
func (r *rankProc) wait(exits chan<- exitEvent, notices chan<- int) {
	werr := waitExited(r.pid)
	if !r.watched && canWaitUnreaped {
		notices <- r.rank
	}
	r.mu.Lock()
	if canWaitUnreaped && werr == nil {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL) // the rank is gone: so are its children
	}
	r.exited = true
	r.mu.Unlock()
	err := r.cmd.Wait()
	if !canWaitUnreaped {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		if !r.watched {
			notices <- r.rank
		}
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		err = nil // a non-zero status is reported through ProcessState
	}
	r.drain()
	for _, fw := range r.fwds {
		fw.Close()
	}
	if r.ctl != nil {
		r.ctl.close()
	}
	exits <- exitEvent{r: r, state: r.cmd.ProcessState, err: err}
}

// drain waits for the rest of the rank's output. Output still flowing is forwarded however long
// it takes (gorun's own stdout may be a slow pipe); a pipe whose pump has waited drainTimeout
// for data that does not come is held open by a process that left the rank's process group, and
// is closed.
func (r *rankProc) drain() {
	done := make(chan struct{})
	go func() { r.readers.Wait(); close(done) }()
	tick := time.NewTicker(drainTimeout / 10)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			for i, f := range r.pipes {
				if since := r.idle[i].Load(); since != 0 && now.UnixNano()-since > int64(drainTimeout) {
					f.Close() // unblocks the pump
				}
			}
		}
	}
}

// pump copies a rank's pipe into its line forwarder until EOF or until the pipe is closed,
// keeping idle up to date for drain.
func pump(src *os.File, fw *lineForwarder, idle *atomic.Int64) {
	buf := make([]byte, 64<<10)
	for {
		idle.Store(time.Now().UnixNano())
		n, err := src.Read(buf)
		idle.Store(0)
		if n > 0 {
			fw.Write(buf[:n])
		}
		if err != nil {
			src.Close()
			return
		}
	}
}

// describe returns the exit code gorun passes on for a rank (128+signal when a signal killed
// it; for a remote rank the status its script reported), whether it counts as a failure, and
// a phrase for messages.
func (ev *exitEvent) describe() (int, bool, string) {
	st, r := ev.state, ev.r
	if ev.reportedBy != nil {
		return 0, true, fmt.Sprintf("was reported lost by %s and has not exited", ev.reportedBy.shortName())
	}
	if st == nil {
		return ExitFailure, true, fmt.Sprintf("could not be waited for (%v)", ev.err)
	}
	if r.host != "" {
		if c := r.status(); c >= 0 {
			return c, c != 0, fmt.Sprintf("exited with code %d", c)
		}
		if ev.lost() {
			return sshFailed, true, fmt.Sprintf("is lost: ssh to %s failed or lost the connection (ssh exited with code %d) before the rank reported an exit status", r.host, sshFailed)
		}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		if r.host != "" {
			return 128 + int(sig), true, fmt.Sprintf("was cut off: its ssh was killed by signal %d (%v) before the rank reported an exit status", int(sig), sig)
		}
		return 128 + int(sig), true, fmt.Sprintf("was killed by signal %d (%v)", int(sig), sig)
	}
	c := st.ExitCode()
	if r.host != "" {
		return c, true, fmt.Sprintf("ended without an exit status (ssh exited with code %d)", c)
	}
	return c, c != 0, fmt.Sprintf("exited with code %d", c)
}

// sshFailed is ssh's exit code for its own failures (connection refused, lost, authentication).
const sshFailed = 255

// lost tells whether a remote rank's ssh failed: code 255 and no status from the rank.
func (ev *exitEvent) lost() bool {
	return ev.r.host != "" && ev.state != nil && ev.state.ExitCode() == sshFailed && ev.r.status() < 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
