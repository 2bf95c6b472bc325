// Package jobenv is the bootstrap contract between a launcher and the ranks it starts: which
// environment variables tell a process its rank, its job's size and where rank 0 hosts the
// rendezvous. The launcher writes these variables; package comm reads them. It is the one place
// where the names live.
package jobenv

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
)

// Variables written by gorun's launcher for every rank.
const (
	Rank      = "GORUN_RANK"       // this process's rank in the world communicator, 0-based
	Size      = "GORUN_SIZE"       // number of ranks in the job
	LocalRank = "GORUN_LOCAL_RANK" // rank among the job's processes on this host
	LocalSize = "GORUN_LOCAL_SIZE" // number of the job's processes on this host
	// Coord is host:port where rank 0 listens for the rendezvous. Rank 0 binds it; the others dial it.
	Coord = "GORUN_COORD"
	// CoordByLauncher, when "1", says the launcher itself serves the rendezvous at Coord, so
	// rank 0 dials it like every other rank instead of binding it (gorun does this: it holds
	// the listener from before the ranks start, so no other process can take the port).
	CoordByLauncher = "GORUN_COORD_LAUNCHER"
	// JobID names the job (hex); it appears in error messages and shared-memory segment names.
	JobID = "GORUN_JOB_ID"
	// Secret is the per-job key (hex) every connection proves it knows before it is accepted.
	Secret = "GORUN_SECRET"
	// SecretFile names a file holding the job's secret (for launchers that cannot pass one in
	// the environment: a file on a shared filesystem). It must not be readable by group or others.
	SecretFile = "GORUN_SECRET_FILE"
	// Insecure, when "1", lets a multi-host job without GORUN_SECRET or GORUN_SECRET_FILE start
	// with a secret derived from public facts of the job; every rank warns that it is guessable.
	Insecure = "GORUN_INSECURE"
	// Oversubscribed, when "1", says the launcher placed more of the job's ranks on this host
	// than it has cores: ranks yield the core while they wait, and a starved peer on this host
	// is not presumed dead while its process is alive.
	Oversubscribed = "GORUN_OVERSUBSCRIBED"
	// PeerTimeout bounds how long a rank waits on a silent peer before it reports it lost
	// (a Go duration such as "30s").
	PeerTimeout = "GORUN_PEER_TIMEOUT"
	// Transport forces the data-plane transport: one of Transports (below); auto by default.
	Transport = "GORUN_TRANSPORT"
	// RDMADevice names the RDMA device of the verbs transport (as ibv_devices lists it, or
	// "softibv" for the software device); unset: the first with an active port.
	RDMADevice = "GORUN_RDMA_DEVICE"
	// RDMAGIDIndex forces the GID table index the verbs transport uses on every rank.
	RDMAGIDIndex = "GORUN_RDMA_GID_INDEX"
	// VerbsQP forces the verbs queue pair type: "rc", "uc" or "auto" (RC where every rank has it).
	VerbsQP = "GORUN_VERBS_QP"
	// Iface picks the network (interface name or CIDR) whose address a rank advertises.
	Iface = "GORUN_IFACE"
	// HostID overrides the host identity ranks compare to find peers on the same machine.
	HostID = "GORUN_HOST_ID"
)

// The values of Transport: the names of comm's transports, defined here once for the launcher,
// the ranks and Run (comm.RunTransportVar takes them too, but auto).
const (
	TransportTCP   = "tcp"   // the TCP mesh carries every peer's messages
	TransportShm   = "shm"   // shared memory for every peer (all ranks on one host)
	TransportVerbs = "verbs" // RDMA queue pairs for every peer (InfiniBand, RoCE, Thunderbolt)
	TransportAuto  = "auto"  // shared memory where ranks share a host, TCP elsewhere (the default)
)

// Transports lists the values of Transport, in the order messages name them.
var Transports = []string{TransportTCP, TransportShm, TransportVerbs, TransportAuto}

// TransportList is Transports in words, for error messages: "tcp, shm, verbs or auto".
func TransportList() string {
	return strings.Join(Transports[:len(Transports)-1], ", ") + " or " + Transports[len(Transports)-1]
}

// SegmentPrefix is the file-name prefix of a job's shared-memory segments, which comm creates
// (one per rank) and the launcher removes if a rank died before comm unlinked its own.
func SegmentPrefix(jobID string) string { return "gorun-" + jobID + "-" }

// SegmentDir is the directory shared-memory segments live in: tmpfs where the system has one.
func SegmentDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// IfaceAddr finds this host's IPv4 (else IPv6) address on an interface given by name, or
// inside a CIDR (GORUN_IFACE, gorun --iface): the address a rank advertises for its data plane.
func IfaceAddr(spec string) (net.IP, error) {
	var want *net.IPNet
	if _, n, err := net.ParseCIDR(spec); err == nil {
		want = n
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var found []net.IP
	for _, ifc := range ifaces {
		if want == nil && ifc.Name != spec {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || (want != nil && !want.Contains(ipn.IP)) {
				continue
			}
			found = append(found, ipn.IP)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].To4() != nil && found[j].To4() == nil })
	if len(found) == 0 {
		// Name what there is, so a typo or the wrong machine is obvious.
		var have []string
		for _, ifc := range ifaces {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				have = append(have, ifc.Name+" "+a.String())
			}
		}
		return nil, fmt.Errorf("no address on that interface or in that network (this host has: %s)", strings.Join(have, ", "))
	}
	return found[0], nil
}
