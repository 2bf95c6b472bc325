package boot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"golang.org/x/sys/unix"
)

// RankInfo is what each rank tells rank 0 at the rendezvous, and what rank 0 sends back for
// every rank.
type RankInfo struct {
	Rank   int    `msgpack:"rank"`
	Addr   string `msgpack:"addr"`    // data-plane listener, host:port
	Host   string `msgpack:"host"`    // host name, for messages
	HostID string `msgpack:"host_id"` // ranks with equal host ids share a machine
	PID    int    `msgpack:"pid"`
}

// maxControlMsg bounds a rendezvous message (a rank's info, or the whole table).
const maxControlMsg = 16 << 20

// Timeout bounds the whole rendezvous and mesh set-up: ranks start at different
// times (process start, program loading), so it is more generous than the peer timeout.
func Timeout(id Identity) time.Duration { return max(2*id.PeerTimeout, 60*time.Second) }

// DialRetry dials addr until it answers or the deadline passes, backing off between tries.
func DialRetry(addr string, deadline time.Time) (net.Conn, error) {
	backoff := 20 * time.Millisecond
	for {
		d := net.Dialer{Deadline: deadline, Timeout: 5 * time.Second}
		conn, err := d.Dial("tcp", addr)
		if err == nil {
			return conn, nil
		}
		if hint := LimitHint(err); hint != "" {
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
		peerTimeout = DefaultPeerTimeout
	}
	id := Identity{Source: "launcher", Launcher: true, Size: size, Coord: ln.Addr().String(), Secret: []byte(secret), JobID: jobID, PeerTimeout: peerTimeout}
	// No deadline until the first rank registers: ranks may work a long while before
	// comm.Init, and each rank's bootstrap deadline runs from its own Init.
	_, err := Serve(ln, id, Fnv64([]byte(jobID)), nil, time.Time{}, stop)
	return err
}

// Serve collects every rank's info, then sends the whole table to each. Rank 0
// calls it with its own info (me); a launcher with me == nil, and rank 0 then registers too.
func Serve(ln net.Listener, id Identity, jobHash uint64, me *RankInfo, deadline time.Time, cancel <-chan struct{}) ([]RankInfo, error) {
	table := make([]RankInfo, id.Size)
	missing := id.Size
	if me != nil {
		table[0] = *me
		missing--
	}
	conns := make([]net.Conn, id.Size)
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
	registered := make([]bool, id.Size)
	if me != nil {
		registered[0] = true
	}
	claim := func(h Hello) error {
		regMu.Lock()
		defer regMu.Unlock()
		if registered[h.Rank] {
			return fmt.Errorf("%s registered already", h.Who())
		}
		return nil
	}
	// Every rank may dial at once: the cap leaves room for all of them besides strangers.
	g := NewGate(id.Name(), min(id.Size, MaxWorldAtOnce))
	defer g.Close()
	type arrival struct {
		rank int
		info RankInfo
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
			if !g.Admit(conn) {
				continue
			}
			go func() {
				h, err := AcceptHandshake(conn, id.Secret, ConnRendezvous, id.ClaimedID(), id.Size, jobHash, claim, time.Now().Add(HandshakeTimeout))
				g.Release()
				if err != nil {
					g.Refuse(conn, err)
					return
				}
				var info RankInfo
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if err := readControl(conn, &info); err != nil || info.Rank != int(h.Rank) {
					g.Refuse(conn, fmt.Errorf("bad registration from %s: %v", h.Who(), err))
					return
				}
				conn.SetDeadline(time.Time{})
				select {
				case arrivals <- arrival{int(h.Rank), info, conn}:
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
				g.Refuse(a.conn, fmt.Errorf("rank %d registered twice", a.rank))
				continue
			}
			conns[a.rank], table[a.rank] = a.conn, a.info
			regMu.Lock()
			registered[a.rank] = true
			regMu.Unlock()
			missing--
			if timeout == nil {
				// The ranks' own deadlines run from their Init: so does this one.
				deadline = time.Now().Add(Timeout(id))
				timer := time.NewTimer(time.Until(deadline))
				defer timer.Stop()
				timeout = timer.C
			}
		case <-timeout:
			e := &RendezvousTimeoutError{Server: serverName(me), Addr: id.Coord, Size: id.Size, After: Timeout(id)}
			for r := range id.Size {
				if conns[r] == nil && (r > 0 || me == nil) {
					e.Missing = append(e.Missing, r)
				}
			}
			return nil, e
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, id.Size)
	for r := range id.Size {
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

func serverName(me *RankInfo) string {
	if me == nil {
		return "gorun launcher"
	}
	return "rank 0"
}

// Join registers, on a connection that passed the handshake, with whoever serves the
// rendezvous, and returns the table it sends.
func Join(conn net.Conn, id Identity, jobHash uint64, me RankInfo, deadline time.Time) ([]RankInfo, error) {
	conn.SetDeadline(deadline)
	if err := writeControl(conn, me); err != nil {
		return nil, fmt.Errorf("comm: rank %d: registering at the rendezvous: %w", id.Rank, err)
	}
	var table []RankInfo
	if err := readControl(conn, &table); err != nil {
		return nil, fmt.Errorf("comm: rank %d: waiting for the rank table from the rendezvous at %s: %w", id.Rank, id.Coord, err)
	}
	if len(table) != id.Size {
		return nil, fmt.Errorf("comm: rank %d: rank table has %d entries, want %d", id.Rank, len(table), id.Size)
	}
	for r, info := range table {
		if info.Rank != r || info.Addr == "" {
			return nil, fmt.Errorf("comm: rank %d: malformed rank table entry %d", id.Rank, r)
		}
	}
	return table, nil
}

// LimitHint names the operating-system limit behind err, if it is one that a large job runs
// into: open files (a rank holds a socket per peer) or local ports.
func LimitHint(err error) string {
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
