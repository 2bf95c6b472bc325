//go:build linux || darwin

package ibv

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// Environment variables that make the software device misbehave on purpose, for tests.
const (
	// SoftDropEnv=N drops every N-th packet this device sends. Under UC the message is lost
	// (the sender's completion still says success, as on a real adapter); under RC the
	// emulated adapter retransmits it after a short delay.
	SoftDropEnv = "GORUN_SOFTIBV_DROP"
	// SoftVanishEnv=N takes this device's link down after it has sent N packets, as a pulled
	// cable would: nothing leaves or arrives any more, while the process lives on.
	SoftVanishEnv = "GORUN_SOFTIBV_VANISH_AFTER"
	// SoftVanishRankEnv=R limits SoftVanishEnv to the process whose GORUN_RANK is R.
	SoftVanishRankEnv = "GORUN_SOFTIBV_VANISH_RANK"
	// SoftNoRCEnv=1 makes RC queue pair creation fail with EOPNOTSUPP, as Apple's Thunderbolt
	// RDMA does (errno 102 on macOS).
	SoftNoRCEnv = "GORUN_SOFTIBV_NO_RC"
)

// SoftFilePrefix starts the names of the software device's ring files (in jobenv.SegmentDir()).
const SoftFilePrefix = "gorun-softibv-"

const (
	softRingSize   = 4 << 20
	softMaxMsg     = 1 << 20
	softRetransmit = 2 * time.Millisecond
)

type softDevice struct {
	id   uint64
	name string

	mu      sync.Mutex
	qps     map[uint32]*softQP
	mrs     map[uint32]*softMR
	nextQPN uint32
	nextKey uint32
	closed  bool

	drop, vanishAfter int64 // fault injection, from the environment
	sent              int64
	dark              bool // the link is gone
	noRC              bool
}

func openSoft(name string) (Device, error) {
	d := &softDevice{name: name, qps: map[uint32]*softQP{}, mrs: map[uint32]*softMR{}, nextQPN: 0x100, nextKey: 0x1000}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	d.id = binary.BigEndian.Uint64(b[:]) | 1
	for name, dst := range map[string]*int64{SoftDropEnv: &d.drop, SoftVanishEnv: &d.vanishAfter} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive packet count", name, v)
			}
			*dst = n
		}
	}
	if r := os.Getenv(SoftVanishRankEnv); r != "" && r != os.Getenv(jobenv.Rank) {
		d.vanishAfter = 0
	}
	d.noRC = os.Getenv(SoftNoRCEnv) == "1"
	return d, nil
}

func (d *softDevice) Name() string      { return d.name }
func (d *softDevice) Transport() string { return "Software (shared memory, one host)" }
func (d *softDevice) Ports() int        { return 1 }
func (d *softDevice) MaxMsg() int       { return softMaxMsg }

func (d *softDevice) gid() GID {
	var g GID
	g[0], g[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(g[8:], d.id)
	return g
}

func (d *softDevice) QueryPort(port int) (PortAttr, error) {
	if port != 1 {
		return PortAttr{}, fmt.Errorf("%s: no port %d", SoftName, port)
	}
	st := PortActive
	d.mu.Lock()
	if d.dark {
		st = PortDown
	}
	d.mu.Unlock()
	return PortAttr{State: st, ActiveMTU: 4096, LinkLayer: "Ethernet", GIDTblLen: 1}, nil
}

// GIDs: one link-local GID, as an Apple Thunderbolt port publishes before it has an IPv4
// address; the remote's ring files are found from it.
func (d *softDevice) GIDs(port int) ([]GIDEntry, error) {
	if port != 1 {
		return nil, fmt.Errorf("%s: no port %d", SoftName, port)
	}
	return []GIDEntry{{Index: 0, GID: d.gid(), Type: "RoCE v2"}}, nil
}

func (d *softDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, qp := range d.qps {
		qp.destroy()
	}
	d.qps = map[uint32]*softQP{}
	d.closed = true
	return nil
}

type softPD struct{ d *softDevice }

func (d *softDevice) AllocPD() (PD, error) { return &softPD{d}, nil }
func (pd *softPD) Close() error            { return nil }

type softMR struct {
	d      *softDevice
	buf    []byte
	addr   uint64
	key    uint32
	access Access
}

func (pd *softPD) RegMR(buf []byte, access Access) (MR, error) {
	if len(buf) == 0 {
		return nil, errors.New("register: empty buffer")
	}
	d := pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextKey++
	mr := &softMR{d: d, buf: buf, addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), key: d.nextKey, access: access}
	d.mrs[mr.key] = mr
	return mr, nil
}

func (mr *softMR) Addr() uint64 { return mr.addr }
func (mr *softMR) Len() int     { return len(mr.buf) }
func (mr *softMR) LKey() uint32 { return mr.key }
func (mr *softMR) RKey() uint32 { return mr.key }
func (mr *softMR) Close() error {
	mr.d.mu.Lock()
	defer mr.d.mu.Unlock()
	if mr.d.mrs[mr.key] != mr {
		return errors.New("deregister: memory region already closed")
	}
	delete(mr.d.mrs, mr.key)
	return nil
}

// region returns the registered bytes [addr, addr+n) of the region with key, if it allows need.
func (d *softDevice) region(key uint32, addr uint64, n uint32, need Access) ([]byte, bool) {
	mr := d.mrs[key]
	if mr == nil || mr.access&need != need || addr < mr.addr || addr+uint64(n) > mr.addr+uint64(len(mr.buf)) {
		return nil, false
	}
	off := addr - mr.addr
	return mr.buf[off : off+uint64(n)], true
}

type softCQ struct {
	d       *softDevice
	depth   int
	wcs     []WC
	overrun bool
}

func (d *softDevice) CreateCQ(depth int) (CQ, error) {
	if depth <= 0 {
		return nil, fmt.Errorf("create CQ: depth %d", depth)
	}
	return &softCQ{d: d, depth: depth}, nil
}

func (cq *softCQ) Close() error { return nil }

func (cq *softCQ) push(wc WC) {
	if len(cq.wcs) >= cq.depth {
		cq.overrun = true
		return
	}
	cq.wcs = append(cq.wcs, wc)
}

// Poll runs the emulated adapter (moves packets in both directions, generates completions) and
// returns what completed.
func (cq *softCQ) Poll(wcs []WC) (int, error) {
	d := cq.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, errors.New("poll: device closed")
	}
	d.progress()
	if cq.overrun {
		return 0, errors.New("completion queue overrun")
	}
	n := copy(wcs, cq.wcs)
	cq.wcs = cq.wcs[:copy(cq.wcs, cq.wcs[n:])]
	return n, nil
}

const (
	qpsReset = iota
	qpsInit
	qpsRTR
	qpsRTS
	qpsErr
)

type softQP struct {
	d                *softDevice
	num              uint32
	typ              QPType
	cq               *softCQ
	maxSend, maxRecv int
	state            int
	access           Access
	in, out          *softRing
	recvq            []RecvWR
	sendq            []softWR // posted, not on the wire yet
	inflight         []softWR // RC: on the wire, not yet acknowledged
	sendPSN, recvPSN uint32
	stallUntil       time.Time
	retryTimeout     time.Duration
}

type softWR struct {
	wr         SendWR
	posted     time.Time
	start, end uint64
	dropped    bool // already lost once (RC retransmits it)
}

func (d *softDevice) ringPath(id uint64, qpn uint32) string {
	return filepath.Join(jobenv.SegmentDir(), fmt.Sprintf("%s%016x-%d", SoftFilePrefix, id, qpn))
}

func (pd *softPD) CreateQP(typ QPType, cq CQ, maxSend, maxRecv int) (QP, error) {
	d := pd.d
	scq, ok := cq.(*softCQ)
	if !ok || scq.d != d {
		return nil, errors.New("create QP: completion queue of another device")
	}
	switch typ {
	case RC:
		if d.noRC {
			return nil, fmt.Errorf("create QP: %w (%s=1)", syscall.EOPNOTSUPP, SoftNoRCEnv)
		}
	case UC:
	default:
		return nil, fmt.Errorf("create QP: type %v not supported", typ)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextQPN++
	qp := &softQP{d: d, num: d.nextQPN, typ: typ, cq: scq, maxSend: maxSend, maxRecv: maxRecv}
	in, err := createRing(d.ringPath(d.id, qp.num), softRingSize)
	if err != nil {
		return nil, fmt.Errorf("create QP: %w", err)
	}
	qp.in = in
	d.qps[qp.num] = qp
	return qp, nil
}

func (qp *softQP) Num() uint32  { return qp.num }
func (qp *softQP) Type() QPType { return qp.typ }

func (qp *softQP) ToInit(port int, access Access) error {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	if qp.state != qpsReset || port != 1 {
		return fmt.Errorf("modify QP %d to INIT: %w", qp.num, syscall.EINVAL)
	}
	if qp.typ == UC && access&AccessRemoteRead != 0 {
		return fmt.Errorf("modify QP %d to INIT: UC does not allow remote read: %w", qp.num, syscall.EINVAL)
	}
	qp.access, qp.state = access, qpsInit
	return nil
}

func (qp *softQP) ToRTR(a RTRAttr) error {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	if qp.state != qpsInit {
		return fmt.Errorf("modify QP %d to RTR: %w", qp.num, syscall.EINVAL)
	}
	g := a.Remote.GID
	if !g.IsLinkLocal() || a.SGIDIndex != 0 {
		return fmt.Errorf("modify QP %d to RTR: GID %v / sgid index %d: %w", qp.num, g, a.SGIDIndex, syscall.EINVAL)
	}
	path := qp.d.ringPath(binary.BigEndian.Uint64(g[8:]), a.Remote.QPN)
	out, err := openRing(path)
	if err != nil {
		return fmt.Errorf("modify QP %d to RTR: remote QP %d at %v: %w", qp.num, a.Remote.QPN, g, err)
	}
	os.Remove(path) // both ends have it mapped now
	qp.out, qp.recvPSN, qp.state = out, a.Remote.PSN, qpsRTR
	return nil
}

func (qp *softQP) ToRTS(a RTSAttr) error {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	if qp.state != qpsRTR {
		return fmt.Errorf("modify QP %d to RTS: %w", qp.num, syscall.EINVAL)
	}
	qp.sendPSN, qp.state = a.PSN, qpsRTS
	// 4.096 us * 2^timeout per try, RetryCnt+1 tries, as an adapter counts.
	qp.retryTimeout = time.Duration(4096<<min(max(a.Timeout, 1), 31)) * time.Nanosecond * time.Duration(a.RetryCnt+1)
	return nil
}

func (qp *softQP) PostSend(wr *SendWR) error {
	d := qp.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if qp.state != qpsRTS {
		return fmt.Errorf("post send on QP %d: not in RTS: %w", qp.num, syscall.EINVAL)
	}
	if len(qp.sendq)+len(qp.inflight) >= qp.maxSend {
		return fmt.Errorf("post send on QP %d: send queue full: %w", qp.num, syscall.ENOMEM)
	}
	if wr.SGE.Length > softMaxMsg {
		return fmt.Errorf("post send on QP %d: %d bytes exceed the %d-byte message limit: %w", qp.num, wr.SGE.Length, softMaxMsg, syscall.EINVAL)
	}
	switch wr.Op {
	case OpSend, OpSendImm, OpWrite, OpWriteImm:
	default:
		return fmt.Errorf("post send on QP %d: opcode %v: %w", qp.num, wr.Op, syscall.EINVAL)
	}
	qp.sendq = append(qp.sendq, softWR{wr: *wr, posted: time.Now()})
	return nil
}

func (qp *softQP) PostRecv(wr *RecvWR) error {
	d := qp.d
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case qp.state == qpsReset:
		return fmt.Errorf("post recv on QP %d: in RESET: %w", qp.num, syscall.EINVAL)
	case qp.state == qpsErr:
		qp.cq.push(WC{WRID: wr.WRID, Status: WCWRFlushErr, Opcode: WCRecv, QPNum: qp.num})
		return nil
	case len(qp.recvq) >= qp.maxRecv:
		return fmt.Errorf("post recv on QP %d: receive queue full: %w", qp.num, syscall.ENOMEM)
	}
	qp.recvq = append(qp.recvq, *wr)
	return nil
}

func (qp *softQP) Close() error {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	qp.destroy()
	delete(qp.d.qps, qp.num)
	return nil
}

func (qp *softQP) destroy() {
	if qp.in != nil {
		qp.in.store(ringOffGone, 1)
		qp.in.close()
		os.Remove(qp.in.path)
		qp.in = nil
	}
	if qp.out != nil {
		qp.out.close()
		qp.out = nil
	}
	qp.state = qpsErr
}

// fail moves the QP to the error state: the failing request completes with st, everything else
// posted is flushed.
func (qp *softQP) fail(failed *softWR, st WCStatus) {
	if failed != nil {
		qp.cq.push(WC{WRID: failed.wr.WRID, Status: st, QPNum: qp.num})
	}
	for _, w := range append(qp.inflight, qp.sendq...) {
		if failed == nil || w.wr.WRID != failed.wr.WRID {
			qp.cq.push(WC{WRID: w.wr.WRID, Status: WCWRFlushErr, QPNum: qp.num})
		}
	}
	for _, r := range qp.recvq {
		qp.cq.push(WC{WRID: r.WRID, Status: WCWRFlushErr, Opcode: WCRecv, QPNum: qp.num})
	}
	qp.inflight, qp.sendq, qp.recvq = nil, nil, nil
	qp.state = qpsErr
}

func (qp *softQP) completeSend(w *softWR) {
	if w.wr.Signaled {
		op := WCSend
		if w.wr.Op == OpWrite || w.wr.Op == OpWriteImm {
			op = WCWrite
		}
		qp.cq.push(WC{WRID: w.wr.WRID, Status: WCSuccess, Opcode: op, QPNum: qp.num})
	}
}

// progress is the adapter's work, done whenever a CQ of the device is polled.
func (d *softDevice) progress() {
	now := time.Now()
	for _, qp := range d.qps {
		if qp.state == qpsErr || qp.state == qpsReset {
			continue
		}
		if !d.dark {
			qp.in.store(ringOffAlive, uint64(now.UnixNano()))
			qp.receive()
		}
		if qp.state == qpsRTS {
			qp.transmit(now)
		}
	}
}

// transmit puts posted requests on the wire and, under RC, completes those the peer took.
func (qp *softQP) transmit(now time.Time) {
	d := qp.d
	if qp.typ == RC {
		if nak := qp.out.load(ringOffNak); nak != 0 {
			st := WCStatus(qp.out.load(ringOffNakSt))
			for i := range qp.inflight {
				if qp.inflight[i].start == nak-1 {
					w := qp.inflight[i]
					qp.fail(&w, st)
					return
				}
			}
			qp.fail(nil, st)
			return
		}
		tail := qp.out.load(ringOffTail)
		n := 0
		for n < len(qp.inflight) && qp.inflight[n].end <= tail {
			qp.completeSend(&qp.inflight[n])
			n++
		}
		qp.inflight = qp.inflight[n:]
		// No acknowledgement for the retry period from a peer that stopped polling (dead, or
		// our link is down): the transport retry counter is exceeded.
		var oldest *softWR
		if len(qp.inflight) > 0 {
			oldest = &qp.inflight[0]
		} else if len(qp.sendq) > 0 {
			oldest = &qp.sendq[0]
		}
		if oldest != nil && now.Sub(oldest.posted) > qp.retryTimeout {
			alive := time.Unix(0, int64(qp.out.load(ringOffAlive)))
			if d.dark || now.Sub(alive) > qp.retryTimeout || qp.out.load(ringOffGone) != 0 {
				w := *oldest
				qp.fail(&w, WCRetryExcErr)
				return
			}
		}
	}
	for len(qp.sendq) > 0 && !now.Before(qp.stallUntil) {
		w := &qp.sendq[0]
		if d.dark {
			if qp.typ == RC {
				return // never acknowledged: the retry timer above fails it
			}
			qp.completeSend(w) // UC: sent into the void
			qp.sendq = qp.sendq[1:]
			continue
		}
		var payload []byte
		if w.wr.SGE.Length > 0 {
			b, ok := d.region(w.wr.SGE.LKey, w.wr.SGE.Addr, w.wr.SGE.Length, 0)
			if !ok {
				bad := *w
				qp.fail(&bad, WCLocProtErr)
				return
			}
			payload = b
		}
		if !w.dropped {
			d.sent++
			if d.vanishAfter > 0 && d.sent > d.vanishAfter {
				d.dark = true
				continue
			}
			if d.drop > 0 && d.sent%d.drop == 0 {
				if qp.typ == UC {
					qp.completeSend(w)
					qp.sendq = qp.sendq[1:]
					continue
				}
				w.dropped = true
				qp.stallUntil = now.Add(softRetransmit)
				return
			}
		}
		rec := record{op: w.wr.Op, imm: w.wr.Imm, rkey: w.wr.RKey, raddr: w.wr.RemoteAddr, psn: qp.sendPSN, payload: payload}
		start, end, ok := qp.out.write(&rec)
		if !ok {
			return // the wire is full; later
		}
		qp.sendPSN++
		w.start, w.end = start, end
		if qp.typ == UC {
			qp.completeSend(w)
		} else {
			qp.inflight = append(qp.inflight, *w)
		}
		qp.sendq = qp.sendq[1:]
	}
}

// receive processes the records that arrived, as the receiving adapter.
func (qp *softQP) receive() {
	d := qp.d
	for {
		rec, ok, err := qp.in.peek()
		if err != nil {
			qp.fail(nil, WCGeneralErr)
			return
		}
		if !ok {
			qp.in.store(ringOffRNR, 0)
			return
		}
		if qp.state < qpsRTR {
			if qp.typ == RC {
				return // not ready: the sender's adapter keeps retrying
			}
			qp.in.advance(rec) // UC: dropped
			continue
		}
		if qp.typ == RC && rec.psn != qp.recvPSN {
			qp.nak(rec, WCRemOpErr)
			return
		}
		needRecv := rec.op == OpSend || rec.op == OpSendImm || rec.op == OpWriteImm
		if needRecv && len(qp.recvq) == 0 {
			if qp.typ == RC {
				qp.in.store(ringOffRNR, 1) // receiver not ready: retried until a receive is posted
				return
			}
			qp.in.advance(rec)
			qp.recvPSN = rec.psn + 1
			continue
		}
		switch rec.op {
		case OpWrite, OpWriteImm:
			if len(rec.payload) > 0 {
				dst, ok := d.region(rec.rkey, rec.raddr, uint32(len(rec.payload)), AccessRemoteWrite)
				if !ok || qp.access&AccessRemoteWrite == 0 {
					if qp.typ == RC {
						qp.nak(rec, WCRemAccessErr)
						return
					}
					qp.in.advance(rec) // UC: silently dropped
					qp.recvPSN = rec.psn + 1
					continue
				}
				copy(dst, rec.payload)
			}
			if rec.op == OpWriteImm {
				r := qp.recvq[0]
				qp.recvq = qp.recvq[1:]
				qp.cq.push(WC{WRID: r.WRID, Status: WCSuccess, Opcode: WCRecvImm, ByteLen: uint32(len(rec.payload)), Imm: rec.imm, HasImm: true, QPNum: qp.num})
			}
		case OpSend, OpSendImm:
			r := qp.recvq[0]
			if uint32(len(rec.payload)) > r.SGE.Length {
				qp.recvq = qp.recvq[1:]
				qp.cq.push(WC{WRID: r.WRID, Status: WCLocLenErr, Opcode: WCRecv, QPNum: qp.num})
				qp.nak(rec, WCRemInvReqErr)
				return
			}
			dst, ok := d.region(r.SGE.LKey, r.SGE.Addr, uint32(len(rec.payload)), AccessLocalWrite)
			if !ok && len(rec.payload) > 0 {
				qp.recvq = qp.recvq[1:]
				qp.cq.push(WC{WRID: r.WRID, Status: WCLocProtErr, Opcode: WCRecv, QPNum: qp.num})
				qp.nak(rec, WCRemOpErr)
				return
			}
			copy(dst, rec.payload)
			qp.recvq = qp.recvq[1:]
			qp.cq.push(WC{WRID: r.WRID, Status: WCSuccess, Opcode: WCRecv, ByteLen: uint32(len(rec.payload)), Imm: rec.imm, HasImm: rec.op == OpSendImm, QPNum: qp.num})
		default:
			qp.nak(rec, WCRemInvReqErr)
			return
		}
		qp.in.advance(rec)
		qp.recvPSN = rec.psn + 1
	}
}

// nak refuses a record: an RC sender's adapter fails that request; this QP enters the error
// state (UC has no such signal: the caller drops the record instead).
func (qp *softQP) nak(rec record, st WCStatus) {
	if qp.typ == RC {
		qp.in.store(ringOffNakSt, uint64(st))
		qp.in.store(ringOffNak, rec.pos+1)
	}
	qp.fail(nil, WCRemOpErr)
}
