package comm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// verbsInfo is what a rank tells each peer to connect their queue pair.
type verbsInfo struct {
	Device  string     `msgpack:"device"`
	Port    int        `msgpack:"port"`
	LID     uint16     `msgpack:"lid"`
	MTU     int        `msgpack:"mtu"`
	IB      bool       `msgpack:"ib"` // InfiniBand link layer: LID routing
	QPN     uint32     `msgpack:"qpn"`
	PSN     uint32     `msgpack:"psn"`
	GIDs    []verbsGID `msgpack:"gids"`
	Ctrl    uint64     `msgpack:"ctrl"` // where the peer writes the credits it returns to us
	CtrlKey uint32     `msgpack:"ctrl_key"`
}

type verbsGID struct {
	Index int    `msgpack:"index"`
	GID   []byte `msgpack:"gid"`
	Type  string `msgpack:"type"`
}

// verbsSetupCtx is the message space of the verbs setup, apart from every user's.
const verbsSetupCtx = worldCtx ^ 0x5642 // "VB"

// useVerbs connects every pair of ranks with a queue pair, exchanging what each needs over the
// TCP mesh, and makes the verbs transport the data plane of every peer.
func useVerbs(w *world, t *tcpTransport, id identity) (err error) {
	devName := os.Getenv(jobenv.RDMADevice)
	dev, err := ibv.Open(devName)
	if err != nil {
		return fmt.Errorf("comm: rank %d: %s=verbs: %w", w.rank, jobenv.Transport, err)
	}
	vt := &verbsTransport{w: w, tcp: t, dev: dev, timeout: id.peerTimeout, peers: make([]*verbsPeer, w.size),
		wcs: make([]ibv.WC, 64), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	defer func() {
		if err != nil {
			vt.release()
			err = fmt.Errorf("comm: rank %d: RDMA setup on %s: %w", w.rank, dev.Name(), err)
		}
	}()
	port, err := ibv.ActivePort(dev)
	if err != nil {
		return err
	}
	pattr, err := dev.QueryPort(port)
	if err != nil {
		return err
	}
	gids, err := dev.GIDs(port)
	if err != nil {
		return err
	}
	if vt.pd, err = dev.AllocPD(); err != nil {
		return fmt.Errorf("protection domain: %w", err)
	}
	npeers := w.size - 1
	if vt.cq, err = dev.CreateCQ(npeers*(verbsCredits+verbsSendDepth+4) + 16); err != nil {
		return fmt.Errorf("completion queue: %w", err)
	}
	vt.cache = newRegCache(vt.pd)
	vt.writeChunk = min(dev.MaxMsg(), 1<<20)

	// Queue pair type, the same for the whole job: RC where every rank's device offers it.
	typ, err := verbsQPType(w, vt)
	if err != nil {
		return err
	}
	vt.typ = typ

	// Registered memory: receive and staging buffers per peer, the control words peers write
	// credits into, and the words this rank writes its credits from.
	regs := []struct {
		buf    *[]byte
		mr     *ibv.MR
		size   int
		access ibv.Access
	}{
		{&vt.recvBuf, &vt.recvMR, w.size * verbsCredits * verbsSlot, ibv.AccessLocalWrite},
		{&vt.sendBuf, &vt.sendMR, w.size * verbsStaging * verbsSlot, ibv.AccessLocalWrite},
		{&vt.ctrlBuf, &vt.ctrlMR, w.size * 8, ibv.AccessLocalWrite | ibv.AccessRemoteWrite},
		{&vt.credBuf, &vt.credMR, w.size * 8, ibv.AccessLocalWrite},
	}
	for _, r := range regs {
		*r.buf = make([]byte, r.size)
		if *r.mr, err = vt.pd.RegMR(*r.buf, r.access); err != nil {
			return fmt.Errorf("registering %d bytes: %w", r.size, err)
		}
	}

	mine := make([]verbsGID, 0, len(gids))
	for _, g := range gids {
		mine = append(mine, verbsGID{Index: g.Index, GID: append([]byte(nil), g.GID[:]...), Type: g.Type})
	}
	setup := newComm(w, verbsSetupCtx, nil)
	var reqs []*Request
	for r := 0; r < w.size; r++ {
		if r == w.rank {
			continue
		}
		p := &verbsPeer{t: vt, rank: r, rendezvous: newRendezvous(r), zcRecvs: map[uint32]uint64{}, zcRegs: map[uint64]*regEntry{}}
		if p.qp, err = vt.pd.CreateQP(typ, vt.cq, verbsSendDepth+4, verbsCredits); err != nil {
			return fmt.Errorf("%v queue pair for rank %d: %w", typ, r, err)
		}
		vt.peers[r] = p
		vt.active = append(vt.active, p)
		if err := p.qp.ToInit(port, ibv.AccessLocalWrite|ibv.AccessRemoteWrite); err != nil {
			return fmt.Errorf("queue pair for rank %d: %w", r, err)
		}
		for i := uint32(0); i < verbsStaging; i++ {
			p.freeSlots = append(p.freeSlots, i)
		}
		for i := uint32(0); i < verbsCredits; i++ {
			wr := ibv.RecvWR{WRID: wrID(wrRecv, r, i), SGE: ibv.SGE{Addr: vt.recvMR.Addr() + uint64(r*verbsCredits+int(i))*verbsSlot, Length: verbsSlot, LKey: vt.recvMR.LKey()}}
			if err := p.qp.PostRecv(&wr); err != nil {
				return fmt.Errorf("posting receives for rank %d: %w", r, err)
			}
		}
		info := verbsInfo{Device: dev.Name(), Port: port, LID: pattr.LID, MTU: pattr.ActiveMTU, IB: pattr.LinkLayer == "InfiniBand",
			QPN: p.qp.Num(), PSN: randomPSN(), GIDs: mine, Ctrl: vt.ctrlMR.Addr(), CtrlKey: vt.ctrlMR.RKey()}
		reqs = append(reqs, Go(func() error { return setup.SendValue(info, r, 1) }))
		p.ackAt, p.localPSN = time.Now(), info.PSN
	}
	for _, p := range vt.active {
		var info verbsInfo
		if _, err := setup.RecvValue(&info, p.rank, 1); err != nil {
			return fmt.Errorf("exchanging queue pair attributes with rank %d: %w", p.rank, err)
		}
		if err := p.connect(port, pattr, gids, info); err != nil {
			return fmt.Errorf("connecting to rank %d (%s port %d, QP %d): %w", p.rank, info.Device, info.Port, info.QPN, err)
		}
	}
	if err := WaitAll(reqs...); err != nil {
		return err
	}
	// Every queue pair is ready to receive before anyone sends: UC drops what arrives earlier.
	if _, err := setup.allgatherPair(0, 0, collTag(2)); err != nil {
		return err
	}
	t.verbs.Store(vt)
	w.prog = vt
	go vt.loop()
	return nil
}

// connect moves the peer's queue pair to RTS against the peer's attributes.
func (p *verbsPeer) connect(port int, pattr ibv.PortAttr, gids []ibv.GIDEntry, info verbsInfo) error {
	var remote []ibv.GIDEntry
	for _, g := range info.GIDs {
		if len(g.GID) != 16 {
			return fmt.Errorf("malformed GID of %d bytes", len(g.GID))
		}
		remote = append(remote, ibv.GIDEntry{Index: g.Index, GID: ibv.GID(g.GID), Type: g.Type})
	}
	a := ibv.RTRAttr{Port: port, PathMTU: min(pattr.ActiveMTU, info.MTU), Remote: ibv.Endpoint{QPN: info.QPN, PSN: info.PSN, LID: info.LID, Port: info.Port}}
	if info.IB && pattr.LinkLayer == "InfiniBand" && info.LID != 0 {
		a.Remote.GID = ibv.GID{} // one subnet: LID routing, no global route header
	} else {
		idx, gid, err := ibv.PairGID(gids, remote)
		if err != nil {
			return err
		}
		a.Global, a.SGIDIndex, a.Remote.GID = true, idx, gid
	}
	if err := p.qp.ToRTR(a); err != nil {
		return err
	}
	p.remoteCtrl, p.remoteKey = info.Ctrl+uint64(8*p.t.w.rank), info.CtrlKey
	// Local ACK timeout 4.096 us * 2^18 (about 1 s) and 7 retries; 7 RNR retries means forever.
	return p.qp.ToRTS(ibv.RTSAttr{PSN: p.localPSN, Timeout: 18, RetryCnt: 7, RNRRetry: 7})
}

func randomPSN() uint32 {
	var b [4]byte
	io.ReadFull(rand.Reader, b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}

// verbsQPType decides RC or UC for the job: GORUN_VERBS_QP forces one; otherwise each rank
// tries to create an RC queue pair (Apple's Thunderbolt RDMA refuses, errno 102) and the job
// uses RC only if every rank could.
func verbsQPType(w *world, vt *verbsTransport) (ibv.QPType, error) {
	mode := strings.ToLower(os.Getenv(jobenv.VerbsQP))
	rcOK := int64(0)
	var rcErr error
	switch mode {
	case "uc":
	case "", "auto", "rc":
		qp, err := vt.pd.CreateQP(ibv.RC, vt.cq, 1, 1)
		if err == nil {
			qp.Close()
			rcOK = 1
		} else if mode == "rc" {
			return 0, fmt.Errorf("%s=rc, but %w", jobenv.VerbsQP, err)
		}
		rcErr = err
	default:
		return 0, fmt.Errorf("%s=%q: want rc, uc or auto", jobenv.VerbsQP, mode)
	}
	setup := newComm(w, verbsSetupCtx, nil)
	all, err := setup.allgatherPair(rcOK, 0, collTag(1))
	if err != nil {
		return 0, err
	}
	for r := 0; r < w.size; r++ {
		if all[2*r] == 0 {
			if rcErr != nil {
				logf("gorun: rank %d: %s offers no RC queue pairs (%v): using UC", w.rank, vt.dev.Name(), rcErr)
			}
			return ibv.UC, nil
		}
	}
	return ibv.RC, nil
}
