package tcp

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// Config is what a rank's mesh is built from: the rendezvous table and the rank's identity,
// its data listener, and what the links report to.
type Config struct {
	ID       boot.Identity   // this rank: its rank, the world size, the job's secret, the peer timeout
	JobHash  uint64          // the digest of the job's identity every handshake carries
	Table    []boot.RankInfo // the rendezvous table: every rank's data address
	Listener net.Listener    // this rank's data listener, at Table[ID.Rank].Addr (the caller closes it)
	Deadline time.Time       // by when every link must be up
	Eng      *core.Engine    // where arrivals go
	// Live reports lost peers and decides when a silent peer is lost (Lose, Lost); the mesh
	// itself is what answers Answers (Transport.Answers).
	Live core.Liveness
	// Oversubscribed: the host runs more ranks than it has cores, so waiters yield the core
	// between polls and stop polling sooner.
	Oversubscribed bool
	Finalized      error                            // the cause in a link whose peer finalized
	Logf           func(format string, args ...any) // what the rank logs (a protocol error)
}

// Connect builds the mesh, one authenticated link to every other rank, and starts the links'
// heartbeats and the background goroutine that reads them. On error every link made is closed.
func Connect(cfg Config) (*Transport, error) {
	t := &Transport{peers: make([]*tcpPeer, cfg.ID.Size), timeout: cfg.ID.PeerTimeout, live: cfg.Live,
		rank: cfg.ID.Rank, eng: cfg.Eng, finalized: cfg.Finalized, logf: cfg.Logf,
		oversubscribed: cfg.Oversubscribed}
	if err := buildMesh(t, cfg.Listener, cfg.ID, cfg.JobHash, cfg.Table, cfg.Deadline); err != nil {
		t.closeAll(err)
		return nil, err
	}
	for _, p := range t.peers {
		if p != nil {
			p.start()
		}
	}
	t.startPolling()
	return t, nil
}

// Close fails every link with cause and closes the mesh: the end of a rank whose set-up failed
// after the mesh was built.
func (t *Transport) Close(cause error) { t.closeAll(cause) }

// Answers reports whether the peer rank was heard from (data or a heartbeat) within the peer
// timeout: core.Liveness.Answers, for the data transports whose own link to it went silent.
func (t *Transport) Answers(rank int) bool {
	if rank < 0 || rank >= len(t.peers) || t.peers[rank] == nil {
		return false
	}
	return t.clock()-time.Duration(t.peers[rank].heard.Load()) <= t.timeout
}

// CarryData tells the mesh which peers' messages it carries (the route table's choice, made
// once before any message): waiters poll those links; the others carry only heartbeats, their
// peers' data going through another transport.
func (t *Transport) CarryData(ranks []int) {
	data := make([]*tcpPeer, 0, len(ranks))
	for _, r := range ranks {
		data = append(data, t.peers[r])
	}
	t.dataPeers = data
}

// Beside is the progress mode of a rank that reaches some peers through data, a transport
// polled beside the mesh's links (shared memory for the peers on its host), and the others
// through the mesh.
func (t *Transport) Beside(data core.ProgressSource) core.Progressor {
	return mixedProgress{data: data, tcp: t}
}

// meshDialers bounds the links a rank dials at once while the mesh is built.
const meshDialers = 16

// buildMesh connects every pair of ranks once: each rank dials the ranks below it and accepts
// the ranks above it. A rank dials the nearest first (r-1, r-2, ...), a few at a time, so
// that at any moment each listener has a few dialers, not the whole job (all ranks dialing
// rank 0 first would overrun its cap on unauthenticated connections).
func buildMesh(t *Transport, ln net.Listener, id boot.Identity, jobHash uint64, table []boot.RankInfo, deadline time.Time) error {
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
func dialPeer(t *Transport, id boot.Identity, jobHash uint64, r int, addr string, deadline time.Time) error {
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
func acceptMesh(t *Transport, ln net.Listener, id boot.Identity, jobHash uint64, table []boot.RankInfo, deadline time.Time) error {
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
