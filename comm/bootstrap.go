package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"golang.org/x/sys/unix"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// rankInfo is what each rank tells rank 0 at the rendezvous, and what rank 0 sends back for
// every rank.
type rankInfo struct {
	Rank   int    `msgpack:"rank"`
	Addr   string `msgpack:"addr"`    // data-plane listener, host:port
	Host   string `msgpack:"host"`    // host name, for messages
	HostID string `msgpack:"host_id"` // ranks with equal host ids share a machine
	PID    int    `msgpack:"pid"`
}

// maxControlMsg bounds a rendezvous message (a rank's info, or the whole table).
const maxControlMsg = 16 << 20

// bootstrapTimeout bounds the whole rendezvous and mesh set-up: ranks start at different
// times (process start, program loading), so it is more generous than the peer timeout.
func bootstrapTimeout(id identity) time.Duration { return max(2*id.peerTimeout, 60*time.Second) }

func initTCP(id identity) (*Comm, error) {
	deadline := time.Now().Add(bootstrapTimeout(id))
	jobHash := fnv64([]byte(id.jobID))
	host := hostname()
	me := rankInfo{Rank: id.rank, Host: host, HostID: hostID(), PID: os.Getpid()}

	// Rank 0 listens for the rendezvous before anything else, so early ranks find it, unless
	// the launcher serves it.
	serve := id.rank == 0 && !id.coordByLnch
	var coordLn net.Listener
	if serve {
		var err error
		// Only the address the job named: a rendezvous on every interface would be reachable
		// from networks the job never meant to use.
		coordLn, err = net.Listen("tcp", id.coord)
		if err != nil {
			return nil, fmt.Errorf("comm: rank 0: cannot listen for the rendezvous on %s (from %s's variables; it must be an address of rank 0's host): %w", id.coord, id.source, err)
		}
		defer coordLn.Close()
	}

	var table []rankInfo
	var dataLn net.Listener
	var err error
	if serve {
		advertise, aerr := advertiseHost(id, nil)
		if aerr != nil {
			return nil, aerr
		}
		if dataLn, me.Addr, err = listenData(id, advertise); err != nil {
			return nil, err
		}
		table, err = serveRendezvous(coordLn, id, jobHash, &me, deadline, nil)
	} else {
		var want uint32 // who serves the rendezvous: rank 0, or the launcher
		if id.coordByLnch {
			want = launcherID
		}
		var conn net.Conn
		conn, err = dialAuth(id.coord, deadline, func(c net.Conn) error {
			return dialHandshake(c, id.secret, connRendezvous, uint32(id.rank), id.size, jobHash, want, deadline)
		})
		if err != nil {
			return nil, fmt.Errorf("comm: rank %d: rendezvous at %s: %w", id.rank, id.coord, err)
		}
		defer conn.Close()
		advertise, aerr := advertiseHost(id, conn.LocalAddr())
		if aerr != nil {
			return nil, aerr
		}
		if dataLn, me.Addr, err = listenData(id, advertise); err != nil {
			return nil, err
		}
		table, err = joinRendezvous(conn, id, jobHash, me, deadline)
	}
	if err != nil {
		if dataLn != nil {
			dataLn.Close()
		}
		return nil, err
	}
	defer dataLn.Close()

	hostIDs := make([]string, len(table))
	for r, info := range table {
		hostIDs[r] = info.HostID
	}
	w := newWorld(id.rank, id.size, host, hostIDs)
	w.abort = processAbort
	t := &tcpTransport{w: w, peers: make([]*tcpPeer, id.size), timeout: id.peerTimeout}
	t.oversubscribed = id.oversubscribed || countHost(table, table[id.rank].HostID) > runtime.NumCPU()
	t.live = newLiveness(id.peerTimeout, table, id.rank)
	err = buildMesh(t, dataLn, id, jobHash, table, deadline)
	if err == nil {
		for _, p := range t.peers {
			if p != nil {
				p.start()
			}
		}
		t.startPolling()
		err = useTransports(&meshBootstrap{w: w, mesh: t, id: id, table: table, jobHash: jobHash})
	}
	if err != nil {
		t.closeAll(err)
		return nil, err
	}
	return newComm(w, worldCtx, nil), nil
}

// hostID identifies the machine, so that ranks can tell which peers share it.
func hostID() string {
	if v := os.Getenv(jobenv.HostID); v != "" {
		return v
	}
	if b, err := os.ReadFile("/etc/machine-id"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)) + "/" + hostname()
	}
	return hostname()
}

// advertiseHost picks the address peers will reach this rank's data listener at: the one named
// by GORUN_IFACE (interface name or CIDR), else the local address this rank reaches rank 0 from
// (the network the job evidently shares), else rank 0's own rendezvous host.
func advertiseHost(id identity, toCoord net.Addr) (string, error) {
	if iface := os.Getenv(jobenv.Iface); iface != "" {
		ip, err := jobenv.IfaceAddr(iface)
		if err != nil {
			return "", fmt.Errorf("comm: rank %d: %s=%s: %w", id.rank, jobenv.Iface, iface, err)
		}
		return ip.String(), nil
	}
	if ta, ok := toCoord.(*net.TCPAddr); ok {
		return ta.IP.String(), nil
	}
	h, _, err := net.SplitHostPort(id.coord)
	if err != nil {
		return "", fmt.Errorf("comm: rendezvous address %q: %w", id.coord, err)
	}
	return h, nil
}

// listenData opens the rank's data listener on the address it advertises, and nowhere else.
func listenData(id identity, host string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		if hint := limitHint(err); hint != "" {
			return nil, "", fmt.Errorf("comm: rank %d: data listener: %w%s", id.rank, err, hint)
		}
		return nil, "", fmt.Errorf("comm: rank %d: cannot listen for data links on %s, the address this rank advertises (set %s to the network the job uses): %w", id.rank, host, jobenv.Iface, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return ln, net.JoinHostPort(host, port), nil
}

func dialRetry(addr string, deadline time.Time) (net.Conn, error) {
	backoff := 20 * time.Millisecond
	for {
		d := net.Dialer{Deadline: deadline, Timeout: 5 * time.Second}
		conn, err := d.Dial("tcp", addr)
		if err == nil {
			return conn, nil
		}
		if hint := limitHint(err); hint != "" {
			return nil, fmt.Errorf("%w%s", err, hint)
		}
		if time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("gave up at the bootstrap deadline: %w", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

func writeControl(conn net.Conn, v any) error {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(b)))
	_, err = (&net.Buffers{n[:], b}).WriteTo(conn)
	return err
}

func readControl(conn net.Conn, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxControlMsg {
		return fmt.Errorf("control message of %d bytes exceeds %d", size, maxControlMsg)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(conn, b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// ServeRendezvous hosts the rendezvous of a job for a launcher that set GORUN_COORD (the
// address of ln), GORUN_COORD_LAUNCHER=1, GORUN_JOB_ID and GORUN_SECRET for its ranks: it
// waits until all size ranks have registered, sends each the rank table, and returns. It gives
// up the bootstrap timeout the ranks use (from peerTimeout; 0 means the default) after the
// first rank registered, or when stop is closed. It does not close ln.
func ServeRendezvous(ln net.Listener, size int, jobID, secret string, peerTimeout time.Duration, stop <-chan struct{}) error {
	if peerTimeout <= 0 {
		peerTimeout = defaultPeerTimeout
	}
	id := identity{source: "launcher", launcher: true, size: size, coord: ln.Addr().String(), secret: []byte(secret), jobID: jobID, peerTimeout: peerTimeout}
	// No deadline until the first rank registers: ranks may work a long while before
	// comm.Init, and each rank's bootstrap deadline runs from its own Init.
	_, err := serveRendezvous(ln, id, fnv64([]byte(jobID)), nil, time.Time{}, stop)
	return err
}

// serveRendezvous collects every rank's info, then sends the whole table to each. Rank 0
// calls it with its own info (me); a launcher with me == nil, and rank 0 then registers too.
func serveRendezvous(ln net.Listener, id identity, jobHash uint64, me *rankInfo, deadline time.Time, cancel <-chan struct{}) ([]rankInfo, error) {
	table := make([]rankInfo, id.size)
	missing := id.size
	if me != nil {
		table[0] = *me
		missing--
	}
	conns := make([]net.Conn, id.size)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	// registered mirrors conns for the handshakes, which refuse a rank that registered already
	// before they say anything.
	var regMu sync.Mutex
	registered := make([]bool, id.size)
	if me != nil {
		registered[0] = true
	}
	claim := func(h hello) error {
		regMu.Lock()
		defer regMu.Unlock()
		if registered[h.rank] {
			return fmt.Errorf("%s registered already", h.who())
		}
		return nil
	}
	// Every rank may dial at once: the cap leaves room for all of them besides strangers.
	g := newGate(id.name(), min(id.size, maxWorldAtOnce))
	defer g.close()
	type arrival struct {
		rank int
		info rankInfo
		conn net.Conn
	}
	arrivals := make(chan arrival)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case <-stop:
				// The rendezvous is over (a launcher keeps its listener for the whole job).
				conn.Close()
				continue
			default:
			}
			if !g.admit(conn) {
				continue
			}
			go func() {
				h, err := acceptHandshake(conn, id.secret, connRendezvous, id.claimedID(), id.size, jobHash, claim, time.Now().Add(handshakeTimeout))
				g.release()
				if err != nil {
					g.refuse(conn, err)
					return
				}
				var info rankInfo
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if err := readControl(conn, &info); err != nil || info.Rank != int(h.rank) {
					g.refuse(conn, fmt.Errorf("bad registration from %s: %v", h.who(), err))
					return
				}
				conn.SetDeadline(time.Time{})
				select {
				case arrivals <- arrival{int(h.rank), info, conn}:
				case <-stop:
					conn.Close()
				}
			}()
		}
	}()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		timeout = timer.C
	}
	for missing > 0 {
		select {
		case <-cancel:
			return nil, errors.New("comm: rendezvous cancelled")
		case a := <-arrivals:
			if (a.rank == 0 && me != nil) || conns[a.rank] != nil {
				g.refuse(a.conn, fmt.Errorf("rank %d registered twice", a.rank))
				continue
			}
			conns[a.rank], table[a.rank] = a.conn, a.info
			regMu.Lock()
			registered[a.rank] = true
			regMu.Unlock()
			missing--
			if timeout == nil {
				// The ranks' own deadlines run from their Init: so does this one.
				deadline = time.Now().Add(bootstrapTimeout(id))
				timer := time.NewTimer(time.Until(deadline))
				defer timer.Stop()
				timeout = timer.C
			}
		case <-timeout:
			e := &RendezvousTimeoutError{Server: serverName(me), Addr: id.coord, Size: id.size, After: bootstrapTimeout(id)}
			for r := range id.size {
				if conns[r] == nil && (r > 0 || me == nil) {
					e.Missing = append(e.Missing, r)
				}
			}
			return nil, e
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, id.size)
	for r := range id.size {
		if conns[r] == nil {
			continue // rank 0 serving
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[r].SetDeadline(deadline)
			errs[r] = writeControl(conns[r], table)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("comm: %s: sending the rank table to rank %d: %w", serverName(me), r, err)
		}
	}
	return table, nil
}

// RendezvousTimeoutError reports ranks that never registered at the rendezvous.
type RendezvousTimeoutError struct {
	Server  string // "rank 0" or "gorun launcher"
	Addr    string
	Size    int
	Missing []int
	After   time.Duration
}

func (e *RendezvousTimeoutError) Error() string {
	ranks := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		ranks[i] = strconv.Itoa(r)
	}
	return fmt.Sprintf("comm: %s: ranks %s did not reach the rendezvous at %s within %v", e.Server, strings.Join(ranks, ","), e.Addr, e.After)
}

func serverName(me *rankInfo) string {
	if me == nil {
		return "gorun launcher"
	}
	return "rank 0"
}

// joinRendezvous registers, on a connection that passed the handshake, with whoever serves the
// rendezvous, and returns the table it sends.
func joinRendezvous(conn net.Conn, id identity, jobHash uint64, me rankInfo, deadline time.Time) ([]rankInfo, error) {
	conn.SetDeadline(deadline)
	if err := writeControl(conn, me); err != nil {
		return nil, fmt.Errorf("comm: rank %d: registering at the rendezvous: %w", id.rank, err)
	}
	var table []rankInfo
	if err := readControl(conn, &table); err != nil {
		return nil, fmt.Errorf("comm: rank %d: waiting for the rank table from the rendezvous at %s: %w", id.rank, id.coord, err)
	}
	if len(table) != id.size {
		return nil, fmt.Errorf("comm: rank %d: rank table has %d entries, want %d", id.rank, len(table), id.size)
	}
	for r, info := range table {
		if info.Rank != r || info.Addr == "" {
			return nil, fmt.Errorf("comm: rank %d: malformed rank table entry %d", id.rank, r)
		}
	}
	return table, nil
}

// meshDialers bounds the links a rank dials at once while the mesh is built.
const meshDialers = 16

// buildMesh connects every pair of ranks once: each rank dials the ranks below it and accepts
// the ranks above it. A rank dials the nearest first (r-1, r-2, ...), a few at a time, so
// that at any moment each listener has a few dialers, not the whole job (all ranks dialing
// rank 0 first would overrun its cap on unauthenticated connections).
func buildMesh(t *tcpTransport, ln net.Listener, id identity, jobHash uint64, table []rankInfo, deadline time.Time) error {
	accepted := make(chan error, 1)
	go func() { accepted <- acceptMesh(t, ln, id, jobHash, table, deadline) }()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		slots    = make(chan struct{}, meshDialers)
	)
	failed := func() bool {
		errMu.Lock()
		defer errMu.Unlock()
		return firstErr != nil
	}
	for r := id.rank - 1; r >= 0 && !failed(); r-- {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			err := dialPeer(t, id, jobHash, r, table[r].Addr, deadline)
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		ln.Close() // ends acceptMesh
		<-accepted
		return firstErr
	}
	return <-accepted
}

// dialPeer connects this rank to the lower rank r and registers the link.
func dialPeer(t *tcpTransport, id identity, jobHash uint64, r int, addr string, deadline time.Time) error {
	conn, err := dialAuth(addr, deadline, func(c net.Conn) error {
		return dialHandshake(c, id.secret, connMesh, uint32(id.rank), id.size, jobHash, uint32(r), deadline)
	})
	if err != nil {
		return fmt.Errorf("comm: rank %d: connecting to rank %d at %s: %w", id.rank, r, addr, err)
	}
	p, err := newTCPPeer(t, r, addr, conn.(*net.TCPConn))
	if err != nil {
		return err
	}
	t.meshMu.Lock()
	t.peers[r] = p
	t.meshMu.Unlock()
	return nil
}

// acceptMesh accepts the links of the ranks above this one. Only a rank that is to dial this
// one and has not connected yet is admitted, and only after it has proved the secret: a
// forged or duplicate identity is refused, never taken in place of the real one. It returns
// when every expected rank connected, or with an error naming those that did not by the
// deadline (or when ln is closed).
func acceptMesh(t *tcpTransport, ln net.Listener, id identity, jobHash uint64, table []rankInfo, deadline time.Time) error {
	expect := id.size - 1 - id.rank
	if expect == 0 {
		return nil
	}
	if tl, ok := ln.(*net.TCPListener); ok {
		tl.SetDeadline(deadline)
	}
	// Room for every rank that is to dial this one, besides strangers.
	g := newGate(id.name(), min(expect, maxWorldAtOnce))
	defer g.close()
	var (
		mu       = &t.meshMu
		done     = make(chan struct{})
		finished bool // done is closed (under mu)
		over     bool // set under mu when acceptMesh returns: late handshakes register nothing
		fail     error
	)
	finish := func() { // the caller holds mu
		if !finished {
			finished = true
			close(done)
		}
	}
	claim := func(h hello) error {
		if int(h.rank) <= id.rank {
			return fmt.Errorf("%s is not one of the ranks that dial rank %d", h.who(), id.rank)
		}
		mu.Lock()
		defer mu.Unlock()
		if t.peers[h.rank] != nil {
			return fmt.Errorf("%s connected already", h.who())
		}
		return nil
	}
	serveOne := func(conn net.Conn) {
		h, err := acceptHandshake(conn, id.secret, connMesh, uint32(id.rank), id.size, jobHash, claim, time.Now().Add(handshakeTimeout))
		g.release()
		if err != nil {
			g.refuse(conn, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if over || finished || t.peers[h.rank] != nil {
			// Another connection claiming this rank finished first.
			g.refuse(conn, fmt.Errorf("%s connected already", h.who()))
			return
		}
		p, err := newTCPPeer(t, int(h.rank), conn.RemoteAddr().String(), conn.(*net.TCPConn))
		if err != nil {
			fail = err
			finish()
			return
		}
		t.peers[h.rank] = p
		if expect--; expect == 0 {
			finish()
		}
	}
	acceptErr := make(chan error, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			if g.admit(conn) {
				go serveOne(conn)
			}
		}
	}()
	var err error
	select {
	case <-done:
	case err = <-acceptErr:
	}
	mu.Lock()
	defer mu.Unlock()
	over = true
	if fail != nil {
		return fail
	}
	if expect == 0 {
		return nil
	}
	var missing []string
	for r := id.rank + 1; r < id.size; r++ {
		if t.peers[r] == nil {
			missing = append(missing, fmt.Sprintf("%d (%s)", r, table[r].Addr))
		}
	}
	return fmt.Errorf("comm: rank %d: ranks %s never connected: %w%s", id.rank, strings.Join(missing, ", "), err, limitHint(err))
}

// limitHint names the operating-system limit behind err, if it is one that a large job runs
// into: open files (a rank holds a socket per peer) or local ports.
func limitHint(err error) string {
	switch {
	case errors.Is(err, unix.EMFILE):
		var rl unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
			return fmt.Sprintf(" (this process reached its limit of %d open files, RLIMIT_NOFILE: each rank holds a socket per peer; raise it with ulimit -n, up to the hard limit %d, or run fewer ranks)", rl.Cur, rl.Max)
		}
		return " (this process reached its limit of open files, RLIMIT_NOFILE: raise it with ulimit -n, or run fewer ranks)"
	case errors.Is(err, unix.ENFILE):
		return " (the system-wide limit of open files, fs.file-max, is reached: run fewer ranks)"
	case errors.Is(err, unix.EADDRNOTAVAIL):
		return " (no local port is free: the ephemeral port range, net.ipv4.ip_local_port_range, is used up; run fewer ranks)"
	}
	return ""
}

// countHost is how many ranks of the table run on the host with this id.
func countHost(table []rankInfo, hostID string) int {
	n := 0
	for _, info := range table {
		if info.HostID == hostID {
			n++
		}
	}
	return n
}
