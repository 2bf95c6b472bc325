package verbstp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/jobenv"

	"github.com/gorun-hpc/gorun/comm/internal/verbs"
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

// verbsSetupSpace names the message space of the verbs set-up (core.Setup.Channel).
const verbsSetupSpace = 0x5642 // "VB"

// Setup connects this rank to every peer through RDMA queue pairs, on the devices that
// GORUN_RDMA_DEVICE names, exchanging what it needs over the mesh (every rank of the world
// calls it). It returns the transport, which reaches every peer.
func Setup(b *core.Setup) (core.Transport, func(int) bool, error) {
	vt, err := setupVerbs(b)
	if err != nil {
		return nil, nil, err
	}
	return vt, func(int) bool { return true }, nil
}

// setupVerbs connects every pair of ranks with a queue pair, exchanging what each needs over
// the TCP mesh, which stays the liveness channel.
func setupVerbs(b *core.Setup) (_ *Transport, err error) {
	rank, size, id := b.Rank, b.Size, b.ID
	spec := os.Getenv(jobenv.RDMADevice)
	names, err := verbs.DeviceNames(spec, rank, size)
	if err != nil {
		return nil, fmt.Errorf("comm: rank %d: %s=%s: %w", rank, jobenv.RDMADevice, spec, err)
	}
	here := 0
	for _, info := range b.Table {
		if info.HostID == b.Table[rank].HostID {
			here++
		}
	}
	vt := &Transport{rank: rank, eng: b.Eng, live: b.Live, closeErr: b.Closed, logf: b.Logf,
		oversubscribed: id.Oversubscribed || here > runtime.NumCPU(),
		timeout:        id.PeerTimeout, peers: make([]*verbsPeer, size),
		wcs: make([]ibv.WC, 64), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	defer func() {
		if err != nil {
			vt.release()
			err = fmt.Errorf("comm: rank %d: RDMA setup: %w", rank, err)
		}
	}()
	vt.recvBuf = make([]byte, size*verbsCredits*verbsSlot)
	vt.sendBuf = make([]byte, size*verbsStaging*verbsSlot)
	vt.ctrlBuf = make([]byte, size*8)
	vt.credBuf = make([]byte, size*8)
	byName := map[string]*verbsDev{}
	devOf := make([]*verbsDev, size)
	for r, name := range names {
		if r == rank {
			continue
		}
		d := byName[name]
		if d == nil {
			if d, err = vt.openDev(name); err != nil {
				return nil, err
			}
			byName[name] = d
		}
		d.peers++
		devOf[r] = d
	}
	for _, d := range vt.devs {
		if err := d.setup(vt); err != nil {
			return nil, fmt.Errorf("%s: %w", d.dev.Name(), err)
		}
	}

	// Queue pair type, the same for the whole job: RC where every rank's devices offer it.
	setup := b.Channel(verbsSetupSpace)
	typ, err := verbsQPType(setup, vt)
	if err != nil {
		return nil, err
	}
	vt.typ = typ

	infos := make([]verbsInfo, size)
	for r := 0; r < size; r++ {
		if r == rank {
			continue
		}
		d := devOf[r]
		p := &verbsPeer{t: vt, d: d, rank: r, Rendezvous: core.NewRendezvous(r), zcRecvs: map[uint32]uint64{}, zcRegs: map[uint64]*verbs.RegEntry{}}
		if p.qp, err = d.pd.CreateQP(typ, d.cq, verbsSendDepth+4, verbsCredits); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				// Seen on Thunderbolt RDMA: about ten queue pairs per device (ml-explore/mlx #4209).
				err = fmt.Errorf("%w; the device's queue pairs are exhausted: fewer ranks per device, or other jobs using it", err)
			}
			return nil, fmt.Errorf("%v queue pair on %s for rank %d: %w", typ, d.dev.Name(), r, err)
		}
		vt.peers[r] = p
		vt.active = append(vt.active, p)
		if err := p.qp.ToInit(d.port, ibv.AccessLocalWrite|ibv.AccessRemoteWrite); err != nil {
			return nil, fmt.Errorf("queue pair for rank %d: %w", r, err)
		}
		for i := uint32(0); i < verbsStaging; i++ {
			p.freeSlots = append(p.freeSlots, i)
		}
		for i := uint32(0); i < verbsCredits; i++ {
			wr := ibv.RecvWR{WRID: wrID(wrRecv, r, i), SGE: ibv.SGE{Addr: d.recvMR.Addr() + uint64(r*verbsCredits+int(i))*verbsSlot, Length: verbsSlot, LKey: d.recvMR.LKey()}}
			if err := p.qp.PostRecv(&wr); err != nil {
				return nil, fmt.Errorf("posting receives for rank %d: %w", r, err)
			}
		}
		gids := make([]verbsGID, 0, len(d.gids))
		for _, g := range d.gids {
			gids = append(gids, verbsGID{Index: g.Index, GID: append([]byte(nil), g.GID[:]...), Type: g.Type})
		}
		infos[r] = verbsInfo{Device: d.dev.Name(), Port: d.port, LID: d.pattr.LID, MTU: d.pattr.ActiveMTU, IB: d.pattr.LinkLayer == "InfiniBand",
			QPN: p.qp.Num(), PSN: verbs.RandomPSN(), GIDs: gids, Ctrl: d.ctrlMR.Addr(), CtrlKey: d.ctrlMR.RKey()}
		p.ackAt, p.localPSN = time.Now(), infos[r].PSN
	}
	// Each pair of ranks exchanges its queue pairs' attributes, every rank taking its peers in
	// ascending order: the lowest pair not yet done has both ranks at it, so none waits forever.
	for _, p := range vt.active {
		mine, err := msgpack.Marshal(&infos[p.rank])
		if err != nil {
			return nil, err
		}
		got, err := setup.Exchange([]int{p.rank}, mine)
		if err != nil {
			return nil, fmt.Errorf("exchanging queue pair attributes: %w", err)
		}
		var info verbsInfo
		if err := msgpack.Unmarshal(got[0], &info); err != nil {
			return nil, fmt.Errorf("queue pair attributes from rank %d: %w", p.rank, err)
		}
		if err := p.connect(info); err != nil {
			return nil, fmt.Errorf("connecting %s port %d to rank %d (%s port %d, QP %d): %w", p.d.dev.Name(), p.d.port, p.rank, info.Device, info.Port, info.QPN, err)
		}
	}
	// Every queue pair is ready to receive before anyone sends: UC drops what arrives earlier.
	if _, err := setup.AllgatherPair(0, 0, 2); err != nil {
		return nil, err
	}
	go vt.loop()
	return vt, nil
}

// openDev opens a device and finds its active port and GID table.
func (vt *Transport) openDev(name string) (*verbsDev, error) {
	dev, err := ibv.Open(name)
	if err != nil {
		return nil, err
	}
	d := &verbsDev{dev: dev}
	vt.devs = append(vt.devs, d)
	if d.port, err = ibv.ActivePort(dev); err != nil {
		return nil, fmt.Errorf("%s: %w", dev.Name(), err)
	}
	if d.pattr, err = dev.QueryPort(d.port); err != nil {
		return nil, err
	}
	if d.gids, err = dev.GIDs(d.port); err != nil {
		return nil, err
	}
	return d, nil
}

// setup allocates the device's protection domain and completion queue and registers the
// transport's buffers with it.
func (d *verbsDev) setup(vt *Transport) (err error) {
	if d.pd, err = d.dev.AllocPD(); err != nil {
		return fmt.Errorf("protection domain: %w", err)
	}
	if d.cq, err = d.dev.CreateCQ(d.peers*(verbsCredits+verbsSendDepth+4) + 16); err != nil {
		return fmt.Errorf("completion queue: %w", err)
	}
	d.cache = verbs.NewRegCache(d.pd)
	d.writeChunk = min(d.dev.MaxMsg(), 1<<20)
	for _, r := range []struct {
		buf    []byte
		mr     *ibv.MR
		access ibv.Access
	}{
		{vt.recvBuf, &d.recvMR, ibv.AccessLocalWrite},
		{vt.sendBuf, &d.sendMR, ibv.AccessLocalWrite},
		{vt.ctrlBuf, &d.ctrlMR, ibv.AccessLocalWrite | ibv.AccessRemoteWrite},
		{vt.credBuf, &d.credMR, ibv.AccessLocalWrite},
	} {
		if *r.mr, err = d.pd.RegMR(r.buf, r.access); err != nil {
			return fmt.Errorf("registering %d bytes: %w", len(r.buf), err)
		}
	}
	return nil
}

// connect moves the peer's queue pair to RTS against the peer's attributes.
func (p *verbsPeer) connect(info verbsInfo) error {
	port, pattr, gids := p.d.port, p.d.pattr, p.d.gids
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
		idx, gid, err := verbs.PairGID(gids, remote)
		if err != nil {
			return err
		}
		a.Global, a.SGIDIndex, a.Remote.GID = true, idx, gid
	}
	if err := p.qp.ToRTR(a); err != nil {
		return fmt.Errorf("%w (local GID [%d], remote %v; %s=N picks another GID index, as ibv_devinfo -v numbers them)", err, a.SGIDIndex, a.Remote.GID, jobenv.RDMAGIDIndex)
	}
	p.remoteCtrl, p.remoteKey = info.Ctrl+uint64(8*p.t.rank), info.CtrlKey
	// Local ACK timeout 4.096 us * 2^18 (about 1 s) and 7 retries; 7 RNR retries means forever.
	return p.qp.ToRTS(ibv.RTSAttr{PSN: p.localPSN, Timeout: 18, RetryCnt: 7, RNRRetry: 7})
}

// verbsQPType decides RC or UC for the job: GORUN_VERBS_QP forces one; otherwise each rank
// tries to create an RC queue pair (Apple's Thunderbolt RDMA refuses, errno 102) and the job
// uses RC only if every rank could.
func verbsQPType(setup core.SetupChannel, vt *Transport) (ibv.QPType, error) {
	mode := strings.ToLower(os.Getenv(jobenv.VerbsQP))
	rcOK := int64(0)
	var rcErr error
	switch mode {
	case "uc":
	case "", "auto", "rc":
		rcOK = 1
		for _, d := range vt.devs {
			qp, err := d.pd.CreateQP(ibv.RC, d.cq, 1, 1)
			if err != nil {
				if mode == "rc" {
					return 0, fmt.Errorf("%s=rc, but %s: %w", jobenv.VerbsQP, d.dev.Name(), err)
				}
				rcOK, rcErr = 0, fmt.Errorf("%s: %w", d.dev.Name(), err)
				break
			}
			qp.Close()
		}
	default:
		return 0, fmt.Errorf("%s=%q: want rc, uc or auto", jobenv.VerbsQP, mode)
	}
	all, err := setup.AllgatherPair(rcOK, 0, 1)
	if err != nil {
		return 0, err
	}
	for r := 0; r < len(all)/2; r++ {
		if all[2*r] == 0 {
			if rcErr != nil {
				vt.logf("gorun: rank %d: no RC queue pairs (%v): using UC", vt.rank, rcErr)
			}
			return ibv.UC, nil
		}
	}
	return ibv.RC, nil
}
