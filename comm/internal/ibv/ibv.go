// Package ibv is the small part of the verbs API (libibverbs: InfiniBand, RoCE, Apple's RDMA
// over Thunderbolt) that comm's verbs transport uses, behind Go interfaces with two
// implementations: libibverbs through cgo (build tag "verbs"), and a software device in pure Go
// ("softibv") whose queue pairs and memory regions are emulated over shared memory between the
// processes of one host, so the protocol above runs in CI without RDMA hardware.
//
// Names and numbers follow libibverbs (ibv_wc_status, ibv_qp_type, port states) so that errors
// read the same as in rdma-core's tools.
package ibv

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
)

// QPType is a queue pair's transport service.
type QPType int

const (
	// RC (reliable connected): the hardware acknowledges, retransmits and orders; a send
	// completes once the peer's adapter has the data.
	RC QPType = 2 // IBV_QPT_RC
	// UC (unreliable connected): no acknowledgements or retransmission; a lost packet loses its
	// whole message silently. SEND and RDMA WRITE work, RDMA READ does not.
	UC QPType = 3 // IBV_QPT_UC
)

func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	}
	return fmt.Sprintf("QPType(%d)", int(t))
}

// Access flags of a memory region or queue pair (IBV_ACCESS_*).
type Access int

const (
	AccessLocalWrite  Access = 1
	AccessRemoteWrite Access = 2
	AccessRemoteRead  Access = 4
)

// Opcode of a send work request.
type Opcode int

const (
	OpWrite    Opcode = 0 // IBV_WR_RDMA_WRITE
	OpWriteImm Opcode = 1 // IBV_WR_RDMA_WRITE_WITH_IMM: consumes a receive at the peer
	OpSend     Opcode = 2 // IBV_WR_SEND
	OpSendImm  Opcode = 3 // IBV_WR_SEND_WITH_IMM
)

func (o Opcode) String() string {
	switch o {
	case OpWrite:
		return "RDMA_WRITE"
	case OpWriteImm:
		return "RDMA_WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendImm:
		return "SEND_WITH_IMM"
	}
	return fmt.Sprintf("Opcode(%d)", int(o))
}

// WCOpcode says what a work completion completes.
type WCOpcode int

const (
	WCSend    WCOpcode = 0   // IBV_WC_SEND
	WCWrite   WCOpcode = 1   // IBV_WC_RDMA_WRITE
	WCRecv    WCOpcode = 128 // IBV_WC_RECV
	WCRecvImm WCOpcode = 129 // IBV_WC_RECV_RDMA_WITH_IMM
)

// WCStatus is a work completion's status (enum ibv_wc_status).
type WCStatus int

const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = map[WCStatus]string{
	WCSuccess: "success", WCLocLenErr: "local length error", WCLocQPOpErr: "local QP operation error",
	WCLocProtErr: "local protection error", WCWRFlushErr: "Work Request Flushed Error",
	WCRemInvReqErr: "remote invalid request error", WCRemAccessErr: "remote access error",
	WCRemOpErr: "remote operation error", WCRetryExcErr: "transport retry counter exceeded",
	WCRNRRetryExcErr: "RNR retry counter exceeded", WCGeneralErr: "general error",
}

func (s WCStatus) String() string {
	if n, ok := wcStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status %d", int(s))
}

// WC is a work completion.
type WC struct {
	WRID    uint64
	Status  WCStatus
	Opcode  WCOpcode // valid for receives, and for sends when Status is success
	ByteLen uint32   // receives: bytes placed
	Imm     uint32   // with HasImm: the immediate data of SEND_WITH_IMM / RDMA_WRITE_WITH_IMM
	HasImm  bool
	QPNum   uint32
	Vendor  uint32 // vendor error syndrome
}

// SGE is a scatter/gather element: Length bytes at Addr inside a region registered with LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a send work request with one SGE.
type SendWR struct {
	WRID       uint64
	Op         Opcode
	SGE        SGE
	Imm        uint32 // OpSendImm, OpWriteImm
	RemoteAddr uint64 // OpWrite, OpWriteImm
	RKey       uint32
	Signaled   bool // a completion is generated (errors always are)
}

// RecvWR is a receive work request with one SGE.
type RecvWR struct {
	WRID uint64
	SGE  SGE
}

// PortState is enum ibv_port_state.
type PortState int

const (
	PortDown   PortState = 1
	PortInit   PortState = 2
	PortArmed  PortState = 3
	PortActive PortState = 4
)

func (s PortState) String() string {
	switch s {
	case PortDown:
		return "PORT_DOWN"
	case PortInit:
		return "PORT_INIT"
	case PortArmed:
		return "PORT_ARMED"
	case PortActive:
		return "PORT_ACTIVE"
	case 5:
		return "PORT_ACTIVE_DEFER"
	}
	return fmt.Sprintf("PORT_STATE(%d)", int(s))
}

// PortAttr is what QueryPort reports.
type PortAttr struct {
	State     PortState
	ActiveMTU int // bytes: 256..4096
	LID       uint16
	LinkLayer string // "InfiniBand", "Ethernet", or what the device names (Apple: its own)
	GIDTblLen int
}

// GID is a 128-bit global identifier (an IPv6 address on RoCE and Thunderbolt).
type GID [16]byte

// String writes an IPv4-mapped GID as ::ffff:a.b.c.d, as rdma-core's tools do.
func (g GID) String() string {
	if g.IsIPv4Mapped() {
		return "::ffff:" + net.IP(g[12:]).String()
	}
	return net.IP(g[:]).String()
}

func (g GID) IsZero() bool      { return g == GID{} }
func (g GID) IsLinkLocal() bool { return g[0] == 0xfe && g[1]&0xc0 == 0x80 }

// IsIPv4Mapped reports a ::ffff:a.b.c.d GID (RoCE v2 over an IPv4 address).
func (g GID) IsIPv4Mapped() bool {
	for _, b := range g[:10] {
		if b != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

// GIDEntry is one entry of a port's GID table.
type GIDEntry struct {
	Index int
	GID   GID
	Type  string // "IB/RoCE v1", "RoCE v2", or "" where the device does not say
}

// Endpoint is what a queue pair needs of its peer to connect (exchanged out of band).
type Endpoint struct {
	QPN  uint32
	PSN  uint32
	LID  uint16
	GID  GID
	Port int
}

// RTRAttr moves a queue pair to Ready To Receive.
type RTRAttr struct {
	Port      int
	PathMTU   int // bytes
	Remote    Endpoint
	SGIDIndex int  // local GID used for the global route header
	Global    bool // use the GRH (RoCE, Thunderbolt: always; InfiniBand: only across subnets)
}

// RTSAttr moves a queue pair to Ready To Send.
type RTSAttr struct {
	PSN      uint32
	Timeout  int // RC: local ACK timeout, 4.096 us * 2^Timeout
	RetryCnt int // RC: transport retries before WCRetryExcErr
	RNRRetry int // RC: 7 = retry forever while the peer has no receive posted
}

// Device is an opened RDMA device (ibv_context).
type Device interface {
	Name() string
	Transport() string // "InfiniBand", "Software", ...
	Ports() int
	QueryPort(port int) (PortAttr, error)
	GIDs(port int) ([]GIDEntry, error)
	AllocPD() (PD, error)
	CreateCQ(depth int) (CQ, error)
	// MaxMsg bounds one work request's length.
	MaxMsg() int
	Close() error
}

// PD is a protection domain.
type PD interface {
	// RegMR registers buf, which must stay allocated (and referenced) until the MR is closed.
	RegMR(buf []byte, access Access) (MR, error)
	CreateQP(typ QPType, cq CQ, maxSend, maxRecv int) (QP, error)
	Close() error
}

// MR is a registered memory region.
type MR interface {
	Addr() uint64
	Len() int
	LKey() uint32
	RKey() uint32
	Close() error
}

// CQ is a completion queue, used for sends and receives.
type CQ interface {
	// Poll fills wcs with up to len(wcs) completions and returns how many; it never blocks.
	Poll(wcs []WC) (int, error)
	Close() error
}

// QP is a connected queue pair.
type QP interface {
	Num() uint32
	Type() QPType
	ToInit(port int, access Access) error
	ToRTR(a RTRAttr) error
	ToRTS(a RTSAttr) error
	PostSend(wr *SendWR) error
	PostRecv(wr *RecvWR) error
	Close() error
}

// DeviceInfo describes a device for listings.
type DeviceInfo struct {
	Name      string
	Transport string
	Ports     []PortInfo
}

// PortInfo describes one port of a device.
type PortInfo struct {
	Num  int
	Attr PortAttr
	GIDs []GIDEntry
	Err  error
}

// SoftName is the software device's name.
const SoftName = "softibv"

// ErrNoDevice: no RDMA device is present.
var ErrNoDevice = errors.New("no RDMA device found")

// Hardware reports whether this binary was built with libibverbs (build tag "verbs").
func Hardware() bool { return hwOpen != nil }

// hwList and hwOpen are set by the libibverbs implementation when it is built in.
var (
	hwList func() ([]string, error)
	hwOpen func(name string) (Device, error)
)

// HardwareNames lists the devices libibverbs sees (nil without the verbs build tag).
func HardwareNames() ([]string, error) {
	if hwList == nil {
		return nil, nil
	}
	return hwList()
}

// Open opens a device by name: "softibv" is the software device; any other name is looked up
// through libibverbs. An empty name picks the first hardware device with an active port.
func Open(name string) (Device, error) {
	if strings.HasPrefix(name, SoftName) && strings.Trim(name[len(SoftName):], "0123456789") == "" {
		// softibv, softibv0, softibv1...: separate software adapters, as a host with one
		// device per cable has.
		return openSoft(name)
	}
	if hwOpen == nil {
		if name == "" {
			return nil, fmt.Errorf("%w: this binary was built without libibverbs (go build -tags verbs); the software device %q (ranks on one host) can be chosen explicitly", ErrNoDevice, SoftName)
		}
		return nil, fmt.Errorf("RDMA device %q: this binary was built without libibverbs (go build -tags verbs); only %q is available", name, SoftName)
	}
	names, err := hwList()
	if err != nil {
		return nil, err
	}
	if name != "" {
		for _, n := range names {
			if n == name {
				return hwOpen(n)
			}
		}
		return nil, fmt.Errorf("RDMA device %q not found (libibverbs lists: %s)", name, listOrNone(names))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: libibverbs lists none (is the driver loaded? on macOS: rdma_ctl enable in Recovery)", ErrNoDevice)
	}
	var reasons []string
	for _, n := range names {
		d, err := hwOpen(n)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		if _, err := ActivePort(d); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", n, err))
			d.Close()
			continue
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w with an active port: %s", ErrNoDevice, strings.Join(reasons, "; "))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ActivePort returns the first port of d in state ACTIVE.
func ActivePort(d Device) (int, error) {
	var states []string
	for p := 1; p <= d.Ports(); p++ {
		a, err := d.QueryPort(p)
		if err != nil {
			states = append(states, fmt.Sprintf("port %d: %v", p, err))
			continue
		}
		if a.State == PortActive {
			return p, nil
		}
		states = append(states, fmt.Sprintf("port %d %v", p, a.State))
	}
	return 0, fmt.Errorf("no active port (%s)", strings.Join(states, ", "))
}

// Describe opens every device (hardware, then the software device) and reports its ports and
// GID tables, for gorun --list-devices.
func Describe() ([]DeviceInfo, error) {
	names, err := HardwareNames()
	if err != nil {
		return nil, err
	}
	var out []DeviceInfo
	add := func(d Device) {
		info := DeviceInfo{Name: d.Name(), Transport: d.Transport()}
		for p := 1; p <= d.Ports(); p++ {
			pi := PortInfo{Num: p}
			pi.Attr, pi.Err = d.QueryPort(p)
			if pi.Err == nil {
				pi.GIDs, pi.Err = d.GIDs(p)
			}
			info.Ports = append(info.Ports, pi)
		}
		out = append(out, info)
	}
	for _, n := range names {
		d, err := hwOpen(n)
		if err != nil {
			out = append(out, DeviceInfo{Name: n, Ports: []PortInfo{{Err: err}}})
			continue
		}
		add(d)
		d.Close()
	}
	if d, err := openSoft(SoftName); err == nil {
		add(d)
		d.Close()
	}
	return out, nil
}

// PairGID picks the GIDs two ports use to reach each other: the same kind on both sides, in
// order of preference IPv4-mapped (RoCE v2 over IPv4; Thunderbolt once the port has an IPv4
// address), routable IPv6, then link-local fe80:: (Thunderbolt before any IPv4 address exists,
// or a direct link). RoCE v2 entries win over v1 of the same kind; among equals the lowest index.
// It returns the local GID index and the remote GID.
func PairGID(local, remote []GIDEntry) (int, GID, error) {
	for _, kind := range []func(GID) bool{
		GID.IsIPv4Mapped,
		func(g GID) bool { return !g.IsIPv4Mapped() && !g.IsLinkLocal() },
		GID.IsLinkLocal,
	} {
		l, lok := bestGID(local, kind)
		r, rok := bestGID(remote, kind)
		if lok && rok {
			return l.Index, r.GID, nil
		}
	}
	return 0, GID{}, fmt.Errorf("no GID kind in common (local %s; remote %s); on Thunderbolt give both ports an IPv4 address or none", gidList(local), gidList(remote))
}

func bestGID(es []GIDEntry, kind func(GID) bool) (GIDEntry, bool) {
	var cands []GIDEntry
	for _, e := range es {
		if !e.GID.IsZero() && kind(e.GID) {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return GIDEntry{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		vi, vj := strings.Contains(cands[i].Type, "v2"), strings.Contains(cands[j].Type, "v2")
		if vi != vj {
			return vi
		}
		return cands[i].Index < cands[j].Index
	})
	return cands[0], true
}

func gidList(es []GIDEntry) string {
	var s []string
	for _, e := range es {
		if !e.GID.IsZero() {
			s = append(s, fmt.Sprintf("[%d] %v %s", e.Index, e.GID, e.Type))
		}
	}
	if len(s) == 0 {
		return "empty GID table"
	}
	return strings.Join(s, ", ")
}

// MTUBytes converts enum ibv_mtu (1..5) to bytes.
func MTUBytes(enum int) int {
	if enum < 1 || enum > 5 {
		return 0
	}
	return 128 << enum
}
