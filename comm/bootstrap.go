package comm

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/tcp"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// initTCP joins a job of more than one rank: the rendezvous (comm/internal/boot) gives every
// rank the table of all; the TCP mesh (comm/internal/tcp) links every pair; useTransports
// (route.go) sets up the data transports over it and fixes the route table.
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
	live := worldLiveness{w: w, l: newLiveness(id.PeerTimeout, table, id.Rank)}
	oversubscribed := id.Oversubscribed || countHost(table, table[id.Rank].HostID) > runtime.NumCPU()
	mesh, err := tcp.Connect(tcp.Config{ID: id, JobHash: jobHash, Table: table, Listener: dataLn, Deadline: deadline,
		Eng: w.eng, Live: live, Oversubscribed: oversubscribed, Finalized: ErrFinalized,
		Logf: func(format string, args ...any) { logf(format, args...) }})
	if err != nil {
		return nil, err
	}
	// The data transports are given the liveness with the mesh's word of each peer.
	live.mesh = mesh
	if err := useTransports(newMeshBootstrap(w, mesh, live, id, table, jobHash)); err != nil {
		mesh.Close(err)
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
