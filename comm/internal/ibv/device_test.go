package ibv

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// loopback connects two queue pairs of one device to each other and moves a SEND and an RDMA
// WRITE WITH IMM through them, checking every completion: the smallest end-to-end use of a
// device, real or software.
func loopback(t *testing.T, d Device, typ QPType) {
	port, err := ActivePort(d)
	require.NoError(t, err)
	pa, err := d.QueryPort(port)
	require.NoError(t, err)
	gids, err := d.GIDs(port)
	require.NoError(t, err)
	pd, err := d.AllocPD()
	require.NoError(t, err)
	defer pd.Close()
	cq, err := d.CreateCQ(16)
	require.NoError(t, err)
	defer cq.Close()
	buf := make([]byte, 8192)
	mr, err := pd.RegMR(buf, AccessLocalWrite|AccessRemoteWrite)
	require.NoError(t, err)
	defer mr.Close()
	var qps [2]QP
	for i := range qps {
		qps[i], err = pd.CreateQP(typ, cq, 4, 4)
		if err != nil && typ == RC {
			t.Skipf("%s offers no RC queue pairs: %v", d.Name(), err)
		}
		require.NoError(t, err)
		defer qps[i].Close()
		require.NoError(t, qps[i].ToInit(port, AccessLocalWrite|AccessRemoteWrite))
	}
	for i, qp := range qps {
		a := RTRAttr{Port: port, PathMTU: pa.ActiveMTU, Remote: Endpoint{QPN: qps[1-i].Num(), PSN: 7, LID: pa.LID}}
		if pa.LinkLayer != "InfiniBand" {
			idx, g, err := PairGID(gids, gids)
			require.NoError(t, err)
			a.Global, a.SGIDIndex, a.Remote.GID = true, idx, g
		}
		require.NoError(t, qp.ToRTR(a))
		require.NoError(t, qp.ToRTS(RTSAttr{PSN: 7, Timeout: 14, RetryCnt: 7, RNRRetry: 7}))
	}
	copy(buf, "ping")
	sge := func(off, n int) SGE { return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()} }
	require.NoError(t, qps[1].PostRecv(&RecvWR{WRID: 10, SGE: sge(1024, 64)}))
	require.NoError(t, qps[1].PostRecv(&RecvWR{WRID: 11, SGE: sge(1024, 64)}))
	require.NoError(t, qps[0].PostSend(&SendWR{WRID: 1, Op: OpSend, SGE: sge(0, 4), Signaled: true}))
	require.NoError(t, qps[0].PostSend(&SendWR{WRID: 2, Op: OpWriteImm, SGE: sge(0, 4), RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey(), Imm: 42, Signaled: true}))
	got := map[uint64]WC{}
	wcs := make([]WC, 8)
	for deadline := time.Now().Add(5 * time.Second); len(got) < 4; {
		n, err := cq.Poll(wcs)
		require.NoError(t, err)
		for _, wc := range wcs[:n] {
			require.Equal(t, WCSuccess, wc.Status, "work request %d: %v", wc.WRID, wc.Status)
			got[wc.WRID] = wc
		}
		require.True(t, time.Now().Before(deadline), "completions after 5s: %+v", got)
	}
	require.Equal(t, "ping", string(buf[1024:1028]))
	require.Equal(t, "ping", string(buf[4096:4100]))
	require.Equal(t, uint32(4), got[10].ByteLen)
	require.True(t, got[11].HasImm)
	require.Equal(t, uint32(42), got[11].Imm)
}

func TestSoftLoopback(t *testing.T) {
	for _, typ := range []QPType{RC, UC} {
		t.Run(typ.String(), func(t *testing.T) {
			d, err := Open(SoftName)
			require.NoError(t, err)
			defer d.Close()
			loopback(t, d, typ)
		})
	}
}

// TestHardwareLoopback runs the loopback on every device libibverbs lists; it skips, saying
// why, where there is none (these machines) or libibverbs is not built in.
func TestHardwareLoopback(t *testing.T) {
	if !Hardware() {
		t.Skip("built without libibverbs: go test -tags verbs")
	}
	names, err := HardwareNames()
	require.NoError(t, err)
	if len(names) == 0 {
		out, _ := exec.Command("ibv_devices").CombinedOutput()
		t.Skipf("no RDMA device: ibv_devices lists none (%s)", strings.TrimSpace(string(out)))
	}
	for _, name := range names {
		for _, typ := range []QPType{RC, UC} {
			t.Run(name+"/"+typ.String(), func(t *testing.T) {
				d, err := Open(name)
				require.NoError(t, err)
				defer d.Close()
				if _, err := ActivePort(d); err != nil {
					t.Skipf("%s: %v", name, err)
				}
				loopback(t, d, typ)
			})
		}
	}
}

func TestDescribe(t *testing.T) {
	infos, err := Describe()
	require.NoError(t, err)
	require.NotEmpty(t, infos)
	soft := infos[len(infos)-1]
	require.Equal(t, SoftName, soft.Name)
	require.Len(t, soft.Ports, 1)
	require.Equal(t, PortActive, soft.Ports[0].Attr.State)
	require.True(t, soft.Ports[0].GIDs[0].GID.IsLinkLocal())
}
