//go:build linux

// Command chaos is the chaos suite of gorun's job fabric: it runs the checksummed workload
// (internal/chaos/worker) under gorun, on this host and across network-namespace hosts, and
// injects one fault per scenario: kill -9, SIGSTOP/SIGCONT within and beyond the peer timeout,
// a link down and up, a byte of a TCP stream corrupted by a proxy between two hosts, a rank
// that stops receiving while the others flood it (full shared-memory rings), strangers
// connecting with garbage and with replayed hellos. For each it checks that gorun ends within
// the peer timeout (plus a margin) of the fault, names the right rank, leaves no process,
// /dev/shm segment or listening port of the job behind, and never exits 0 with a wrong result
// (the workload checks every element; a run that succeeds must print its "correct" line). It
// prints one PASS or FAIL line per scenario and exits 1 if any failed.
//
//	chaos --bin DIR [--hosts 2 --ssh-args ARGS] [--seed N] [--run REGEXP]
//
// It needs root (kill, ip, iptables). Hosts are the namespaces h1..hN at 10.99.0.i that
// .ci/lib/netns-hosts.sh sets up, their links vgorun1..vgorunN; .ci/steps/55-chaos.sh runs it.
package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin         string
	hosts       int
	sshArgs     string
	peerTimeout time.Duration
	margin      time.Duration
	seed        uint64
	run         *regexp.Regexp
	work        string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "proxy" {
		if err := proxyMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "proxy:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var runRe string
	flag.StringVar(&o.bin, "bin", "", "directory holding the gorun and worker binaries")
	flag.IntVar(&o.hosts, "hosts", 0, "network-namespace hosts h1..hN (10.99.0.i) to run across; 0: this host only")
	flag.StringVar(&o.sshArgs, "ssh-args", "", "gorun --ssh-args for the hosts")
	flag.DurationVar(&o.peerTimeout, "peer-timeout", 3*time.Second, "gorun --peer-timeout")
	flag.DurationVar(&o.margin, "margin", 12*time.Second, "time allowed beyond the peer timeout for a job to end after a fault (kill grace, a loaded machine)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the faults' choices (rank, time, byte)")
	flag.StringVar(&runRe, "run", "", "run only the scenarios whose name matches this regexp")
	flag.Parse()
	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "chaos: --bin is required")
		os.Exit(2)
	}
	var err error
	if o.run, err = regexp.Compile(runRe); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: --run:", err)
		os.Exit(2)
	}
	if o.work, err = os.MkdirTemp("", "gorun-chaos."); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(o.work)
	fmt.Printf("chaos: seed %d (vary with -seed), peer timeout %v, %d hosts\n", o.seed, o.peerTimeout, o.hosts)
	failed, ran := 0, 0
	for i, s := range scenarios() {
		if !o.run.MatchString(s.name) || (s.hosts && o.hosts < 2) {
			continue
		}
		ran++
		rng := mrand.New(mrand.NewPCG(o.seed, uint64(i)))
		start := time.Now()
		what, err := runScenario(&o, s, rng)
		verdict := "PASS"
		if err != nil {
			verdict, failed = "FAIL", failed+1
			what += "; " + err.Error()
		}
		fmt.Printf("%s %s (%.1fs): %s\n", verdict, s.name, time.Since(start).Seconds(), what)
	}
	fmt.Printf("chaos: %d of %d scenarios failed (seed %d)\n", failed, ran, o.seed)
	if failed > 0 || ran == 0 {
		os.Exit(1)
	}
}

// expectation is how a scenario's job must end.
type expectation int

const (
	expectOK   expectation = iota // exit 0, every result checked correct
	expectFail                    // non-zero, within the peer timeout and the margin of the fault
	expectAny                     // either, but exit 0 only with every result correct
)

// env is what an injection sees of the running scenario.
type env struct {
	o       *options
	j       *job
	rng     *mrand.Rand
	listen  []listener // the job's listening sockets
	capture string     // the proxy's capture directory
	undo    []func()   // run after the checks (SIGCONT, link up)
	blame   func(stderr string) error
	note    string
	early   int // stranger connections made during the bootstrap
}

type scenario struct {
	name   string
	hosts  bool // across the namespace hosts, 2 ranks each; else 4 ranks here
	proxy  string
	args   []string // worker flags
	expect expectation
	inject func(e *env) (string, error)
	// early, if set, runs from the job's start until it is ready (the ranks' bootstrap,
	// while their data listeners are open) and says what it did.
	early func(e *env, ready <-chan struct{}) string
}

// pick chooses one of n ranks.
func pick(rng *mrand.Rand, n int) int { return rng.IntN(n) }

func scenarios() []scenario {
	stop := func(long bool) func(e *env) (string, error) {
		return func(e *env) (string, error) {
			r := pick(e.rng, 4)
			pid := e.j.rank(r).pid
			d := e.o.peerTimeout / 3
			if long {
				d = 3 * e.o.peerTimeout
			}
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return "", fmt.Errorf("SIGSTOP rank %d (pid %d): %w", r, pid, err)
			}
			cont := func() { syscall.Kill(pid, syscall.SIGCONT) }
			if long {
				// The job must end without it; it is continued only after the checks, so
				// that they see whether gorun ended a stopped rank.
				e.undo = append(e.undo, cont)
				e.blame = mentions([]int{r}, "")
				return fmt.Sprintf("rank %d stopped (kept stopped)", r), nil
			}
			time.Sleep(d)
			cont()
			return fmt.Sprintf("rank %d stopped for %v", r, d), nil
		}
	}
	kill := func(e *env) (string, error) {
		r := pick(e.rng, 4)
		pid := e.j.rank(r).pid
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return "", fmt.Errorf("kill -9 rank %d (pid %d): %w", r, pid, err)
		}
		e.blame = namedFirst(r)
		return fmt.Sprintf("rank %d killed", r), nil
	}
	link := func(long bool) func(e *env) (string, error) {
		return func(e *env) (string, error) {
			h := 2 // ranks 2 and 3
			dev := "vgorun" + strconv.Itoa(h)
			if out, err := exec.Command("ip", "link", "set", dev, "down").CombinedOutput(); err != nil {
				return "", fmt.Errorf("ip link set %s down: %v: %s", dev, err, out)
			}
			up := func() { exec.Command("ip", "link", "set", dev, "up").Run() }
			if long {
				e.undo = append(e.undo, up)
				e.blame = mentions([]int{2, 3}, "10.99.0.2")
				return fmt.Sprintf("link of host 10.99.0.%d down (kept down)", h), nil
			}
			d := e.o.peerTimeout / 3
			time.Sleep(d)
			up()
			return fmt.Sprintf("link of host 10.99.0.%d down for %v", h, d), nil
		}
	}
	corrupt := func(e *env) (string, error) {
		// The byte was chosen when the proxy started; the fault happens when the stream gets
		// there. The ranks on each side of a proxied link are 0,1 (h1) and 2,3 (h2).
		e.blame = func(stderr string) error {
			if !regexp.MustCompile(`\brank [0-3]\b`).MatchString(stderr) {
				return errors.New("no rank named")
			}
			return nil
		}
		return "stream damaged by the proxy (see its line)", nil
	}
	// After the bootstrap the ranks have closed their data listeners: what is left of the
	// job's listening sockets (gorun's rendezvous) gets the same treatment.
	strangers := func(replay bool) func(e *env) (string, error) {
		return func(e *env) (string, error) {
			n := 0
			for _, l := range e.listen {
				for _, payload := range strangerPayloads(e, replay) {
					if sendTo(l.addr, payload) {
						n++
					}
				}
			}
			if n == 0 && e.early == 0 {
				return "", errors.New("no listener of the job was reached, during the bootstrap or after (not exercised)")
			}
			return fmt.Sprintf("%d more to %d listeners left after the bootstrap", n, len(e.listen)), nil
		}
	}
	flood := func(long bool) []string {
		d := "1s"
		if long {
			d = "7s" // beyond the peer timeout
		}
		return []string{"--stall-rank", "3", "--stall-iter", "2", "--stall-for", d}
	}
	return []scenario{
		{name: "kill9-local", expect: expectFail, inject: kill},
		{name: "kill9-hosts", hosts: true, expect: expectFail, inject: kill},
		{name: "sigstop-brief-local", expect: expectOK, inject: stop(false)},
		{name: "sigstop-long-local", expect: expectFail, inject: stop(true)},
		{name: "sigstop-long-hosts", hosts: true, expect: expectFail, inject: stop(true)},
		{name: "link-flap-hosts", hosts: true, expect: expectOK, inject: link(false)},
		{name: "link-cut-hosts", hosts: true, expect: expectFail, inject: link(true)},
		{name: "corrupt-byte-hosts", hosts: true, proxy: "flip", expect: expectFail, inject: corrupt},
		{name: "corrupt-burst-hosts", hosts: true, proxy: "burst", expect: expectFail, inject: corrupt},
		{name: "shm-full-brief-local", args: flood(false), expect: expectOK, inject: nil},
		{name: "shm-full-long-local", args: flood(true), expect: expectOK, inject: nil},
		{name: "stranger-garbage-hosts", hosts: true, expect: expectOK, early: strangersEarly(false), inject: strangers(false)},
		{name: "stranger-replay-hosts", hosts: true, proxy: "capture", expect: expectOK, early: strangersEarly(true), inject: strangers(true)},
	}
}

// garbage is what a stranger sends: random bytes, a gorun magic with a random rest, and a
// well-formed-looking hello of no job.
func garbage(rng *mrand.Rand) [][]byte {
	r := make([]byte, 4096)
	rand.Read(r)
	m := make([]byte, 72)
	rand.Read(m)
	copy(m, "GRUN\x01\x00\x02\x00")
	h := make([]byte, 72)
	copy(h, "GRUN\x01\x00\x02\x00")
	h[8] = byte(rng.IntN(4))
	h[12] = 4
	return [][]byte{r, m, h}
}

// strangerPayloads: garbage, or the hellos the proxies captured (this job's, replayed, and
// earlier jobs', stale).
func strangerPayloads(e *env, replay bool) [][]byte {
	if !replay {
		return garbage(e.rng)
	}
	caps, _ := filepath.Glob(filepath.Join(e.o.work, "capture-*", "conn-*"))
	var out [][]byte
	for _, c := range caps {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		if nl := strings.IndexByte(string(b), '\n'); nl >= 0 && nl+1 < len(b) {
			out = append(out, b[nl+1:])
		}
	}
	return out
}

// strangersEarly connects to each data listener of the job's ranks as it appears during the
// bootstrap (found with ss in every host), and sends it garbage (or replayed hellos, again
// as the proxy captures more), until the job is ready.
func strangersEarly(replay bool) func(e *env, ready <-chan struct{}) string {
	return func(e *env, ready <-chan struct{}) string {
		sent := map[string]int{} // listener -> payloads sent
		conns := 0
		nss := nsNames(e.o)
		for {
			select {
			case <-ready:
				e.early = conns
				return fmt.Sprintf("during the bootstrap %d stranger connections (%s) to %d rank listeners",
					conns, map[bool]string{false: "garbage", true: "replayed hellos"}[replay], len(sent))
			case <-time.After(5 * time.Millisecond):
			}
			for _, ns := range nss {
				for _, addr := range workerListeners(ns) {
					p := strangerPayloads(e, replay)
					if _, ok := sent[addr]; !ok {
						sent[addr] = 0
						if !replay {
							// A silent stranger holds a connection open, saying nothing.
							go holdOpen(addr, 2*time.Second)
						}
					}
					for _, b := range p[min(sent[addr], len(p)):] {
						go sendTo(addr, b)
						conns++
					}
					sent[addr] = len(p)
				}
			}
		}
	}
}

// workerListeners lists the listening TCP sockets in host namespace ns other than sshd's
// (port 22): the namespaces hold nothing else but the job's ranks. It reads the namespace's
// /proc/PID/net/tcp through one of its processes, which is fast enough to catch the ranks'
// data listeners while the bootstrap has them open.
func workerListeners(ns string) []string {
	pid := nsPid(ns)
	if pid == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/tcp")
	if err != nil {
		return nil
	}
	var a []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" { // LISTEN
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		h, err1 := strconv.ParseUint(host, 16, 32)
		p, err2 := strconv.ParseUint(port, 16, 16)
		if !ok || err1 != nil || err2 != nil || p == 22 {
			continue
		}
		ip := net.IPv4(byte(h), byte(h>>8), byte(h>>16), byte(h>>24))
		if ip.IsUnspecified() {
			ip = net.IPv4(10, 99, 0, byte(nsIndex(ns)))
		}
		a = append(a, net.JoinHostPort(ip.String(), strconv.Itoa(int(p))))
	}
	return a
}

var nsPids = map[string]int{}

// nsPid is a process of namespace ns (its sshd), 0 if none.
func nsPid(ns string) int {
	if p, ok := nsPids[ns]; ok {
		return p
	}
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	p, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	nsPids[ns] = p
	return p
}

func nsIndex(ns string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(ns, "h"))
	return i
}

// holdOpen connects to addr and says nothing for d.
func holdOpen(addr string, d time.Duration) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	time.Sleep(d)
	c.Close()
}

// sendTo connects to addr, writes b and reads until the other side closes or a second
// passes; false if it could not connect.
func sendTo(addr string, b []byte) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write(b)
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			return true
		}
	}
}

// verdictLine is gorun's line that names the failure it blames (time order): "gorun: rank N
// ... exited/was killed/is lost/...", not a rank's own "gorun: rank N: refused ..." log.
var verdictLine = regexp.MustCompile(`(?m)^gorun: rank (\d+)\b[^:\n]*(exited|killed|signal|lost|cut off|terminating|timed out|failed)`)

// namedFirst: gorun's first verdict names rank r.
func namedFirst(r int) func(string) error {
	return func(stderr string) error {
		m := verdictLine.FindStringSubmatch(stderr)
		if m == nil {
			return fmt.Errorf("gorun named no rank (want rank %d)", r)
		}
		if m[1] != strconv.Itoa(r) {
			return fmt.Errorf("gorun named rank %s first, want rank %d", m[1], r)
		}
		return nil
	}
}

// mentions: some line names one of the ranks, or the host addr.
func mentions(ranks []int, addr string) func(string) error {
	var alt []string
	for _, r := range ranks {
		alt = append(alt, strconv.Itoa(r))
	}
	re := regexp.MustCompile(`\brank (` + strings.Join(alt, "|") + `)\b`)
	return func(stderr string) error {
		if re.MatchString(stderr) || (addr != "" && strings.Contains(stderr, addr)) {
			return nil
		}
		if addr != "" {
			return fmt.Errorf("neither rank %v nor %s named", ranks, addr)
		}
		return fmt.Errorf("rank %v not named", ranks)
	}
}

// listener is a listening TCP socket of one of the job's processes.
type listener struct {
	ns   string // network namespace, "" for this one
	addr string
	pid  int
}

var ssUsers = regexp.MustCompile(`pid=(\d+)`)

// listeners lists the listening sockets, in namespace ns, of the processes in pids.
func listeners(ns string, pids map[int]bool) []listener {
	args := []string{"ss", "-ltnpH"}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		return nil
	}
	var ls []listener
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		for _, m := range ssUsers.FindAllStringSubmatch(line, -1) {
			pid, _ := strconv.Atoi(m[1])
			if pids[pid] {
				addr := f[3]
				if strings.HasPrefix(addr, "*:") || strings.HasPrefix(addr, "0.0.0.0:") || strings.HasPrefix(addr, "[::]:") {
					addr = "127.0.0.1" + addr[strings.LastIndexByte(addr, ':'):]
				}
				ls = append(ls, listener{ns: ns, addr: addr, pid: pid})
				break
			}
		}
	}
	return ls
}

func nsNames(o *options) []string {
	var ns []string
	for i := 1; i <= o.hosts; i++ {
		ns = append(ns, "h"+strconv.Itoa(i))
	}
	return ns
}

func runScenario(o *options, s scenario, rng *mrand.Rand) (string, error) {
	gorun := filepath.Join(o.bin, "gorun")
	worker := filepath.Join(o.bin, "worker")
	duration := "90s" // a cap: the driver ends a run with the stop file
	args := []string{"--peer-timeout", o.peerTimeout.String()}
	if s.hosts {
		hf := filepath.Join(o.work, "hostfile")
		if err := os.WriteFile(hf, []byte("10.99.0.1 slots=2\n10.99.0.2 slots=2\n"), 0o644); err != nil {
			return "", err
		}
		args = append(args, "--hostfile", hf, "--iface", "10.99.0.0/24")
		if o.sshArgs != "" {
			args = append(args, "--ssh-args", o.sshArgs)
		}
	}
	stopFile := filepath.Join(o.work, "stop-"+s.name)
	os.Remove(stopFile)
	args = append(args, "-n", "4", worker, "--duration", duration, "--stop-file", stopFile)
	args = append(args, s.args...)
	e := &env{o: o, rng: rng}

	if s.proxy != "" {
		e.capture = filepath.Join(o.work, "capture-"+s.name)
		os.MkdirAll(e.capture, 0o700)
		stopProxy, note, err := startProxy(o, s.proxy, e.capture, rng)
		if err != nil {
			return "", fmt.Errorf("proxy: %w", err)
		}
		defer stopProxy()
		e.note = note
	}

	j, err := startJob(gorun, args, 4)
	if err != nil {
		return "", err
	}
	e.j = j
	defer func() {
		select {
		case <-j.done:
		default:
			j.kill()
		}
	}()
	var earlyDone chan string
	if s.early != nil {
		earlyDone = make(chan string, 1)
		go func() { earlyDone <- s.early(e, j.ready) }()
	}
	readyErr := j.waitReady(60 * time.Second)
	earlyWhat := ""
	if earlyDone != nil {
		j.releaseReady()
		earlyWhat = <-earlyDone
	}
	if readyErr != nil {
		return earlyWhat, readyErr
	}
	startup := time.Since(j.started)
	pids := map[int]bool{j.cmd.Process.Pid: true}
	for _, p := range j.pids() {
		pids[p] = true
	}
	e.listen = listeners("", pids)
	if s.hosts {
		for _, ns := range nsNames(o) {
			e.listen = append(e.listen, listeners(ns, pids)...)
		}
	}

	// The fault, at a time of the seed's choosing into the run.
	time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
	what := "no fault injected (the workload's own)"
	if s.inject != nil {
		if what, err = s.inject(e); err != nil {
			for _, u := range e.undo {
				u()
			}
			return "", err
		}
	}
	faultAt := time.Now()
	if earlyWhat != "" {
		what = earlyWhat + "; then " + what
	}
	if e.note != "" {
		what += "; " + e.note
	}
	what = fmt.Sprintf("ready after %.1fs; %s", startup.Seconds(), what)
	defer func() {
		for _, u := range e.undo {
			u()
		}
	}()

	// A failing scenario must end by itself within the peer timeout and the margin. Any other
	// must go on: 3 more iterations after the fault (a stall and the margin allowed), then
	// the stop file ends it, within the margin.
	var problems []string
	if s.expect == expectFail {
		if bound := o.peerTimeout + o.margin; !j.wait(bound) {
			problems = append(problems, fmt.Sprintf("gorun still running %v after the fault (hang)", bound))
			j.kill()
		}
	} else {
		it0 := j.iteration()
		deadline := time.Now().Add(o.peerTimeout + o.margin + 8*time.Second)
		for j.iteration() < it0+3 && time.Now().Before(deadline) && !j.wait(50*time.Millisecond) {
		}
		if it := j.iteration(); it < it0+3 && !j.wait(0) {
			problems = append(problems, fmt.Sprintf("no progress: rank 0 at iteration %d, %d before the fault, after %v (hang)",
				it, it0, o.peerTimeout+o.margin+8*time.Second))
		}
		os.WriteFile(stopFile, nil, 0o644)
		if !j.wait(o.margin) {
			problems = append(problems, fmt.Sprintf("gorun still running %v after the stop file (hang)", o.margin))
			j.kill()
		}
	}
	took := j.ended.Sub(faultAt)
	out, stderr := j.outText(), j.errText()
	correct := strings.Contains(out, ": correct\n")
	wrong := strings.Contains(out+stderr, "MISMATCH")
	if s.proxy == "" || s.proxy == "capture" {
		what += fmt.Sprintf("; gorun exit %d after %.1fs", j.exit, took.Seconds())
	} else {
		what += fmt.Sprintf("; gorun exit %d, %.1fs after the start", j.exit, j.ended.Sub(j.started).Seconds())
	}
	if wrong {
		what += " (the workload's check caught a wrong result)"
	}
	if m := verdictLine.FindStringSubmatch(stderr); m != nil {
		what += fmt.Sprintf(" naming rank %s", m[1])
	}
	if e.capture != "" {
		// What the proxy did (its damage line), or that the stream never got that far.
		b, _ := os.ReadFile(filepath.Join(e.capture, "proxy.log"))
		if m := regexp.MustCompile(`proxy: (flipped|wrote)[^\n]*`).Find(b); m != nil {
			what += "; " + string(m)
		} else if s.proxy != "capture" {
			problems = append(problems, "the proxy never reached the byte to damage")
		}
	}
	switch {
	case j.exit == 0 && (!correct || wrong):
		problems = append(problems, "exit 0 without every result correct (wrong result accepted)")
	case s.expect == expectOK && j.exit != 0:
		problems = append(problems, "the job failed: "+lastLines(stderr, 4))
	case s.expect == expectFail && j.exit == 0:
		problems = append(problems, "the job succeeded despite the fault")
	}
	if j.exit != 0 && e.blame != nil && len(problems) == 0 {
		if err := e.blame(stderr); err != nil {
			problems = append(problems, err.Error()+": "+lastLines(stderr, 4))
		}
	}
	problems = append(problems, leftovers(o, j, worker, e.listen)...)
	if len(problems) == 0 {
		return what + "; clean", nil
	}
	return what, errors.New(strings.Join(problems, "; "))
}

// leftovers waits up to the peer timeout and the margin for the job's processes to end (ranks
// cut off from their peers end when their peer timeout fires), then reports what is left: the
// worker's processes, gorun's ssh sessions, the job's /dev/shm segments, its listening
// sockets. Whatever is left is then ended (the driver started it), so that the next scenario
// starts clean.
func leftovers(o *options, j *job, worker string, ls []listener) []string {
	var problems []string
	deadline := time.Now().Add(o.peerTimeout + o.margin)
	var procs []int
	for {
		procs = procsOf(worker)
		if len(procs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(procs) > 0 {
		problems = append(problems, fmt.Sprintf("worker processes left: %v", procs))
		for _, p := range procs {
			syscall.Kill(p, syscall.SIGCONT)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if j.jobID != "" && j.jobID != "-" {
		segs, _ := filepath.Glob("/dev/shm/gorun-" + j.jobID + "-*")
		if len(segs) > 0 {
			problems = append(problems, fmt.Sprintf("shared-memory segments left: %v", segs))
			for _, s := range segs {
				os.Remove(s)
			}
		}
	}
	if key := sshKey(o.sshArgs); key != "" {
		if p := cmdlinesWith(key); len(p) > 0 {
			problems = append(problems, fmt.Sprintf("gorun's ssh sessions left: %v", p))
		}
	}
	still := map[string]bool{}
	for _, l := range ls {
		for _, now := range listenersAt(l.ns) {
			if now == l.addr {
				still[l.addr] = true
			}
		}
	}
	if len(still) > 0 {
		var a []string
		for k := range still {
			a = append(a, k)
		}
		problems = append(problems, fmt.Sprintf("ports still listening: %v", a))
	}
	return problems
}

// sshKey is the identity file named by -i in ssh arguments: only gorun's sessions use it.
func sshKey(args string) string {
	f := strings.Fields(args)
	for i := range f {
		if f[i] == "-i" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// cmdlinesWith lists the processes whose command line holds s.
func cmdlinesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || pid == os.Getppid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// listenersAt lists every listening TCP address in namespace ns.
func listenersAt(ns string) []string {
	args := []string{"ss", "-ltnH"}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		return nil
	}
	var a []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			addr := f[3]
			if strings.HasPrefix(addr, "*:") || strings.HasPrefix(addr, "0.0.0.0:") || strings.HasPrefix(addr, "[::]:") {
				addr = "127.0.0.1" + addr[strings.LastIndexByte(addr, ':'):]
			}
			a = append(a, addr)
		}
	}
	return a
}

// startProxy starts the proxy in host h2's namespace and redirects h2's connections to h1
// (but ssh) through it: every link between the ranks of h2 and those of h1. mode is flip or
// burst (damage once, at a byte of the seed's choosing) or capture (only record hellos).
func startProxy(o *options, mode, capture string, rng *mrand.Rand) (func(), string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := []string{"netns", "exec", "h2", self, "proxy", "--listen", ":7070", "--capture", capture,
		"--seed", strconv.FormatUint(rng.Uint64(), 10)}
	note := "proxy between hosts 10.99.0.2 and 10.99.0.1"
	if mode != "capture" {
		after := 200_000 + rng.IntN(1_300_000)
		args = append(args, "--corrupt", mode, "--corrupt-after", strconv.Itoa(after))
		note = fmt.Sprintf("proxy damages (%s) the stream from 10.99.0.2 to 10.99.0.1 at byte %d", mode, after)
	}
	cmd := exec.Command("ip", args...)
	logf := filepath.Join(capture, "proxy.log")
	lf, err := os.Create(logf)
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, "", err
	}
	rule := []string{"netns", "exec", "h2", "iptables", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", "10.99.0.1",
		"!", "--dport", "22", "-m", "mark", "!", "--mark", strconv.Itoa(proxyMark), "-j", "REDIRECT", "--to-ports", "7070"}
	stop := func() {
		del := append([]string(nil), rule...)
		del[6] = "-D"
		exec.Command("ip", del...).Run()
		cmd.Process.Kill()
		cmd.Wait()
		lf.Close()
	}
	for i := 0; ; i++ {
		b, _ := os.ReadFile(logf)
		if strings.Contains(string(b), "proxy: listening") {
			break
		}
		if i > 100 {
			stop()
			return nil, "", fmt.Errorf("proxy did not start: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := exec.Command("ip", rule...).CombinedOutput(); err != nil {
		stop()
		return nil, "", fmt.Errorf("iptables: %v: %s", err, out)
	}
	return func() {
		stop()
	}, note, nil
}
