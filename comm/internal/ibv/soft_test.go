//go:build linux || darwin

package ibv

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// end is one side of a connected pair of software queue pairs.
type end struct {
	dev Device
	cq  CQ
	qp  QP
	mr  MR
	buf []byte
}

func newEnd(t *testing.T, typ QPType) *end {
	d, err := openSoft(SoftName)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	pd, err := d.AllocPD()
	require.NoError(t, err)
	cq, err := d.CreateCQ(64)
	require.NoError(t, err)
	qp, err := pd.CreateQP(typ, cq, 16, 16)
	require.NoError(t, err)
	require.NoError(t, qp.ToInit(1, AccessLocalWrite|AccessRemoteWrite))
	buf := make([]byte, 1<<16)
	mr, err := pd.RegMR(buf, AccessLocalWrite|AccessRemoteWrite)
	require.NoError(t, err)
	return &end{dev: d, cq: cq, qp: qp, mr: mr, buf: buf}
}

func (e *end) endpoint(t *testing.T) Endpoint {
	gids, err := e.dev.GIDs(1)
	require.NoError(t, err)
	return Endpoint{QPN: e.qp.Num(), PSN: 100, GID: gids[0].GID}
}

// pair connects two fresh queue pairs of typ; timeout is the RC ACK timeout exponent.
func pair(t *testing.T, typ QPType, timeout int) (a, b *end) {
	a, b = newEnd(t, typ), newEnd(t, typ)
	for _, x := range [][2]*end{{a, b}, {b, a}} {
		require.NoError(t, x[0].qp.ToRTR(RTRAttr{Port: 1, PathMTU: 4096, Remote: x[1].endpoint(t), Global: true}))
		require.NoError(t, x[0].qp.ToRTS(RTSAttr{PSN: 100, Timeout: timeout, RetryCnt: 2, RNRRetry: 7}))
	}
	return a, b
}

func (e *end) sge(off, n int) SGE {
	return SGE{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}
}

// poll polls both ends until e has want completions (or the deadline).
func poll(t *testing.T, e, other *end, want int) []WC {
	var got []WC
	wcs := make([]WC, 8)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want {
		if _, err := other.cq.Poll(nil); err != nil {
			t.Fatal(err)
		}
		n, err := e.cq.Poll(wcs)
		require.NoError(t, err)
		got = append(got, wcs[:n]...)
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d completions after 5s: %+v", len(got), want, got)
		}
	}
	return got
}

func TestSoftSendWrite(t *testing.T) {
	for _, typ := range []QPType{RC, UC} {
		t.Run(typ.String(), func(t *testing.T) {
			a, b := pair(t, typ, 14)
			copy(a.buf, "hello, verbs")
			require.NoError(t, b.qp.PostRecv(&RecvWR{WRID: 7, SGE: b.sge(0, 100)}))
			require.NoError(t, b.qp.PostRecv(&RecvWR{WRID: 8, SGE: b.sge(100, 100)}))
			require.NoError(t, a.qp.PostSend(&SendWR{WRID: 1, Op: OpSend, SGE: a.sge(0, 12), Signaled: true}))
			require.NoError(t, a.qp.PostSend(&SendWR{WRID: 2, Op: OpWriteImm, SGE: a.sge(0, 5), RemoteAddr: b.mr.Addr() + 1000, RKey: b.mr.RKey(), Imm: 0xabcd, Signaled: true}))
			sends := poll(t, a, b, 2)
			require.Equal(t, []WC{{WRID: 1, Opcode: WCSend, QPNum: a.qp.Num()}, {WRID: 2, Opcode: WCWrite, QPNum: a.qp.Num()}}, sends)
			recvs := poll(t, b, a, 2)
			require.Equal(t, WC{WRID: 7, Opcode: WCRecv, ByteLen: 12, QPNum: b.qp.Num()}, recvs[0])
			require.Equal(t, WC{WRID: 8, Opcode: WCRecvImm, ByteLen: 5, Imm: 0xabcd, HasImm: true, QPNum: b.qp.Num()}, recvs[1])
			require.Equal(t, "hello, verbs", string(b.buf[:12]))
			require.Equal(t, "hello", string(b.buf[1000:1005]))
		})
	}
}

// Under UC a dropped packet is gone (its sender still sees success) and an RDMA WRITE to a bad
// key is dropped silently; under RC the adapter retransmits, and a bad key fails the sender.
func TestSoftLossAndProtection(t *testing.T) {
	t.Setenv(SoftDropEnv, "2")
	for _, typ := range []QPType{RC, UC} {
		t.Run(typ.String(), func(t *testing.T) {
			a, b := pair(t, typ, 14)
			for i := 0; i < 4; i++ {
				a.buf[i] = byte('a' + i)
				require.NoError(t, b.qp.PostRecv(&RecvWR{WRID: uint64(i), SGE: b.sge(i*10, 10)}))
				require.NoError(t, a.qp.PostSend(&SendWR{WRID: uint64(i), Op: OpSend, SGE: a.sge(i, 1), Signaled: true}))
			}
			sends := poll(t, a, b, 4)
			for _, wc := range sends {
				require.Equal(t, WCSuccess, wc.Status)
			}
			want := 4
			if typ == UC {
				want = 2 // packets 2 and 4 of the device were lost
			}
			recvs := poll(t, b, a, want)
			time.Sleep(10 * time.Millisecond)
			more := poll(t, b, a, 0)
			require.Len(t, append(recvs, more...), want)
			var got []byte
			for i := range recvs {
				got = append(got, b.buf[int(recvs[i].WRID)*10])
			}
			if typ == RC {
				require.Equal(t, "abcd", string(got))
			} else {
				require.Equal(t, "ac", string(got))
			}

			require.NoError(t, a.qp.PostSend(&SendWR{WRID: 9, Op: OpWrite, SGE: a.sge(0, 4), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() + 99, Signaled: true}))
			wcs := poll(t, a, b, 1)
			if typ == RC {
				require.Equal(t, WCRemAccessErr, wcs[0].Status)
			} else {
				require.Equal(t, WCSuccess, wcs[0].Status)
			}
		})
	}
}

// RC: a SEND waits (RNR) until the receiver posts a receive; UC: it is dropped.
func TestSoftReceiverNotReady(t *testing.T) {
	for _, typ := range []QPType{RC, UC} {
		t.Run(typ.String(), func(t *testing.T) {
			a, b := pair(t, typ, 14)
			copy(a.buf, "x")
			require.NoError(t, a.qp.PostSend(&SendWR{WRID: 1, Op: OpSend, SGE: a.sge(0, 1), Signaled: true}))
			for i := 0; i < 5; i++ {
				poll(t, b, a, 0)
			}
			require.NoError(t, b.qp.PostRecv(&RecvWR{WRID: 2, SGE: b.sge(0, 10)}))
			time.Sleep(5 * time.Millisecond)
			got := poll(t, b, a, 0)
			if typ == RC {
				got = append(got, poll(t, b, a, 1-len(got))...)
				require.Equal(t, uint32(1), got[0].ByteLen)
			} else {
				require.Empty(t, got)
			}
			require.Equal(t, WCSuccess, poll(t, a, b, 1)[0].Status)
		})
	}
}

// RC: a peer that stops (its device closed, as a killed process) exceeds the retry counter;
// everything else posted is flushed.
func TestSoftRetryExceeded(t *testing.T) {
	a, b := pair(t, RC, 8) // 4.096 us * 2^8 * 3 tries: about 3 ms
	b.dev.Close()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, a.qp.PostSend(&SendWR{WRID: 1, Op: OpSend, SGE: a.sge(0, 1), Signaled: true}))
	require.NoError(t, a.qp.PostSend(&SendWR{WRID: 2, Op: OpSend, SGE: a.sge(0, 1), Signaled: true}))
	wcs := make([]WC, 4)
	var got []WC
	for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n, err := a.cq.Poll(wcs)
		require.NoError(t, err)
		got = append(got, wcs[:n]...)
	}
	require.Len(t, got, 2)
	require.Equal(t, WCRetryExcErr, got[0].Status)
	require.Equal(t, WCWRFlushErr, got[1].Status)
	require.Error(t, a.qp.PostSend(&SendWR{WRID: 3, Op: OpSend, SGE: a.sge(0, 1)}), "posting on a QP in the error state")
}

func TestSoftRules(t *testing.T) {
	d, err := openSoft(SoftName)
	require.NoError(t, err)
	defer d.Close()
	pd, _ := d.AllocPD()
	cq, _ := d.CreateCQ(4)
	uc, err := pd.CreateQP(UC, cq, 4, 4)
	require.NoError(t, err)
	require.ErrorIs(t, uc.ToInit(1, AccessRemoteRead), syscall.EINVAL, "UC allows no RDMA READ")
	require.ErrorIs(t, uc.PostSend(&SendWR{Op: OpSend}), syscall.EINVAL, "posting before RTS")

	t.Setenv(SoftNoRCEnv, "1")
	apple, err := openSoft(SoftName)
	require.NoError(t, err)
	defer apple.Close()
	pd2, _ := apple.AllocPD()
	cq2, _ := apple.CreateCQ(4)
	_, err = pd2.CreateQP(RC, cq2, 4, 4)
	require.True(t, errors.Is(err, syscall.EOPNOTSUPP), "%v", err)
	_, err = pd2.CreateQP(UC, cq2, 4, 4)
	require.NoError(t, err)
}

func TestSoftOversizeSend(t *testing.T) {
	a, b := pair(t, RC, 14)
	require.NoError(t, b.qp.PostRecv(&RecvWR{WRID: 1, SGE: b.sge(0, 4)}))
	require.NoError(t, a.qp.PostSend(&SendWR{WRID: 1, Op: OpSend, SGE: a.sge(0, 8), Signaled: true}))
	require.Equal(t, WCLocLenErr, poll(t, b, a, 1)[0].Status)
	require.Equal(t, WCRemInvReqErr, poll(t, a, b, 1)[0].Status)
	require.True(t, bytes.Equal(b.buf[:4], make([]byte, 4)), "nothing placed")
}
