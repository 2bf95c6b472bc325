package comm

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// initTCP joins a job of more than one rank: the rendezvous (comm/internal/boot) gives every
// rank the table of all; the TCP mesh links every pair; useTransports (route.go) sets up the
// data transports over it and fixes the route table.
func initTCP(id identity) (*Comm, error) {
	deadline := time.Now().Add(boot.Timeout(id))
	jobHash := id.JobHash()
	host := hostname()
	me := rankInfo{Rank: id.Rank, Host: host, HostID: hostID(), PID: os.Getpid()}

	// Rank 0 listens for the rendezvous before anything else, so early ranks find it, unless
	// the launcher serves it.
	serve := id.Rank == 0 && !id.CoordByLauncher
	var coordLn net.Listener
	if serve {
		var err error
		// Only the address the job named: a rendezvous on every interface would be reachable
		// from networks the job never meant to use.
		coordLn, err = net.Listen("tcp", id.Coord)
		if err != nil {
			return nil, fmt.Errorf("comm: rank 0: cannot listen for the rendezvous on %s (from %s's variables; it must be an address of rank 0's host): %w", id.Coord, id.Source, err)
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
		table, err = boot.Serve(coordLn, id, jobHash, &me, deadline, nil)
	} else {
		var want uint32 // who serves the rendezvous: rank 0, or the launcher
		if id.CoordByLauncher {
			want = boot.LauncherID
		}
		var conn net.Conn
		conn, err = boot.DialAuth(id.Coord, deadline, func(c net.Conn) error {
			return boot.DialHandshake(c, id.Secret, boot.ConnRendezvous, uint32(id.Rank), id.Size, jobHash, want, deadline)
		})
		if err != nil {
			return nil, fmt.Errorf("comm: rank %d: rendezvous at %s: %w", id.Rank, id.Coord, err)
		}
		defer conn.Close()
		advertise, aerr := advertiseHost(id, conn.LocalAddr())
		if aerr != nil {
			return nil, aerr
		}
		if dataLn, me.Addr, err = listenData(id, advertise); err != nil {
			return nil, err
		}
		table, err = boot.Join(conn, id, jobHash, me, deadline)
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
	w := newWorld(id.Rank, id.Size, host, hostIDs)
	w.abort = processAbort
	t := &tcpTransport{w: w, peers: make([]*tcpPeer, id.Size), timeout: id.PeerTimeout}
	t.oversubscribed = id.Oversubscribed || countHost(table, table[id.Rank].HostID) > runtime.NumCPU()
	t.live = worldLiveness{w: w, l: newLiveness(id.PeerTimeout, table, id.Rank), mesh: t}
	err = buildMesh(t, dataLn, id, jobHash, table, deadline)
	if err == nil {
		for _, p := range t.peers {
			if p != nil {
				p.start()
			}
		}
		t.startPolling()
		err = useTransports(newMeshBootstrap(w, t, id, table, jobHash))
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
			return "", fmt.Errorf("comm: rank %d: %s=%s: %w", id.Rank, jobenv.Iface, iface, err)
		}
		return ip.String(), nil
	}
	if ta, ok := toCoord.(*net.TCPAddr); ok {
		return ta.IP.String(), nil
	}
	h, _, err := net.SplitHostPort(id.Coord)
	if err != nil {
		return "", fmt.Errorf("comm: rendezvous address %q: %w", id.Coord, err)
	}
	return h, nil
}

// listenData opens the rank's data listener on the address it advertises, and nowhere else.
func listenData(id identity, host string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		if hint := boot.LimitHint(err); hint != "" {
			return nil, "", fmt.Errorf("comm: rank %d: data listener: %w%s", id.Rank, err, hint)
		}
		return nil, "", fmt.Errorf("comm: rank %d: cannot listen for data links on %s, the address this rank advertises (set %s to the network the job uses): %w", id.Rank, host, jobenv.Iface, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return ln, net.JoinHostPort(host, port), nil
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
	for r := id.Rank - 1; r >= 0 && !failed(); r-- {
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
	conn, err := boot.DialAuth(addr, deadline, func(c net.Conn) error {
		return boot.DialHandshake(c, id.Secret, boot.ConnMesh, uint32(id.Rank), id.Size, jobHash, uint32(r), deadline)
	})
	if err != nil {
		return fmt.Errorf("comm: rank %d: connecting to rank %d at %s: %w", id.Rank, r, addr, err)
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
	expect := id.Size - 1 - id.Rank
	if expect == 0 {
		return nil
	}
	if tl, ok := ln.(*net.TCPListener); ok {
		tl.SetDeadline(deadline)
	}
	// Room for every rank that is to dial this one, besides strangers.
	g := boot.NewGate(id.Name(), min(expect, boot.MaxWorldAtOnce))
	defer g.Close()
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
	claim := func(h boot.Hello) error {
		if int(h.Rank) <= id.Rank {
			return fmt.Errorf("%s is not one of the ranks that dial rank %d", h.Who(), id.Rank)
		}
		mu.Lock()
		defer mu.Unlock()
		if t.peers[h.Rank] != nil {
			return fmt.Errorf("%s connected already", h.Who())
		}
		return nil
	}
	serveOne := func(conn net.Conn) {
		h, err := boot.AcceptHandshake(conn, id.Secret, boot.ConnMesh, uint32(id.Rank), id.Size, jobHash, claim, time.Now().Add(boot.HandshakeTimeout))
		g.Release()
		if err != nil {
			g.Refuse(conn, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if over || finished || t.peers[h.Rank] != nil {
			// Another connection claiming this rank finished first.
			g.Refuse(conn, fmt.Errorf("%s connected already", h.Who()))
			return
		}
		p, err := newTCPPeer(t, int(h.Rank), conn.RemoteAddr().String(), conn.(*net.TCPConn))
		if err != nil {
			fail = err
			finish()
			return
		}
		t.peers[h.Rank] = p
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
			if g.Admit(conn) {
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
	for r := id.Rank + 1; r < id.Size; r++ {
		if t.peers[r] == nil {
			missing = append(missing, fmt.Sprintf("%d (%s)", r, table[r].Addr))
		}
	}
	return fmt.Errorf("comm: rank %d: ranks %s never connected: %w%s", id.Rank, strings.Join(missing, ", "), err, boot.LimitHint(err))
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
