//go:build verbs && cgo

package ibv

/*
#cgo LDFLAGS: -libverbs
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

// Wrappers: the verbs calls are inline functions or macros over the provider's ops, and the
// work request and completion structs hold unions cgo cannot reach.

struct gorun_wc {
	uint64_t wr_id;
	uint32_t status, opcode, vendor_err, byte_len, imm, qp_num, has_imm;
};

static int gorun_poll(struct ibv_cq *cq, int n, struct gorun_wc *out) {
	struct ibv_wc wc[64];
	if (n > 64) n = 64;
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].qp_num = wc[i].qp_num;
		out[i].has_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
		out[i].imm = out[i].has_imm ? ntohl(wc[i].imm_data) : 0;
	}
	return got;
}

static int gorun_post_send(struct ibv_qp *qp, uint64_t wr_id, int op, uint64_t addr, uint32_t len,
		uint32_t lkey, uint32_t imm, uint64_t raddr, uint32_t rkey, int signaled) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	switch (op) {
	case 0: wr.opcode = IBV_WR_RDMA_WRITE; break;
	case 1: wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
	case 2: wr.opcode = IBV_WR_SEND; break;
	default: wr.opcode = IBV_WR_SEND_WITH_IMM; break;
	}
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int gorun_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

static int gorun_query_port(struct ibv_context *ctx, int port, struct ibv_port_attr *attr) {
	memset(attr, 0, sizeof *attr);
	return ibv_query_port(ctx, (uint8_t)port, attr);
}

static struct ibv_qp *gorun_create_qp(struct ibv_pd *pd, int type, struct ibv_cq *cq, int max_send, int max_recv) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap.max_send_wr = max_send;
	a.cap.max_recv_wr = max_recv;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.qp_type = type;
	return ibv_create_qp(pd, &a);
}

static int gorun_to_init(struct ibv_qp *qp, int port, int access) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int gorun_to_rtr(struct ibv_qp *qp, int rc, int mtu, uint32_t dest_qpn, uint32_t rq_psn, uint16_t dlid,
		int global, const uint8_t *dgid, int sgid_index, int port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = port;
	if (global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = sgid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (rc) {
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int gorun_to_rts(struct ibv_qp *qp, int rc, uint32_t psn, int timeout, int retry, int rnr) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = timeout;
		a.retry_cnt = retry;
		a.rnr_retry = rnr;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

func init() {
	hwList = listHW
	hwOpen = openHW
}

func listHW() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if err == syscall.ENOSYS || err == syscall.ENOENT || err == nil {
			return nil, nil // no verbs support in the kernel: no devices
		}
		return nil, fmt.Errorf("ibv_get_device_list: %w", err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	return names, nil
}

type hwDevice struct {
	name      string
	ctx       *C.struct_ibv_context
	transport string
	ports     int
	maxCQE    int
}

func openHW(name string) (Device, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("ibv_get_device_list: %v", err)
	}
	defer C.ibv_free_device_list(list)
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) != name {
			continue
		}
		ctx, err := C.ibv_open_device(d)
		if ctx == nil {
			return nil, fmt.Errorf("ibv_open_device %s: %v", name, err)
		}
		var attr C.struct_ibv_device_attr
		if rc := C.ibv_query_device(ctx, &attr); rc != 0 {
			C.ibv_close_device(ctx)
			return nil, fmt.Errorf("ibv_query_device %s: %w", name, syscall.Errno(rc))
		}
		tr := map[C.int]string{0: "InfiniBand", 1: "iWARP", 2: "usNIC", 3: "usNIC UDP", 4: "unspecified"}[C.int(d.transport_type)]
		if tr == "" {
			tr = fmt.Sprintf("transport %d", int(d.transport_type))
		}
		return &hwDevice{name: name, ctx: ctx, transport: tr, ports: int(attr.phys_port_cnt), maxCQE: int(attr.max_cqe)}, nil
	}
	return nil, fmt.Errorf("RDMA device %q not found", name)
}

func (d *hwDevice) Name() string      { return d.name }
func (d *hwDevice) Transport() string { return d.transport }
func (d *hwDevice) Ports() int        { return d.ports }

func (d *hwDevice) MaxMsg() int {
	var a C.struct_ibv_port_attr
	if C.gorun_query_port(d.ctx, 1, &a) != 0 || a.max_msg_sz == 0 {
		return 1 << 20
	}
	return int(min(uint64(a.max_msg_sz), 1<<30))
}

func (d *hwDevice) QueryPort(port int) (PortAttr, error) {
	var a C.struct_ibv_port_attr
	if rc := C.gorun_query_port(d.ctx, C.int(port), &a); rc != 0 {
		return PortAttr{}, fmt.Errorf("ibv_query_port %s:%d: %w", d.name, port, syscall.Errno(rc))
	}
	ll := map[int]string{0: "unspecified", 1: "InfiniBand", 2: "Ethernet"}[int(a.link_layer)]
	if ll == "" {
		ll = fmt.Sprintf("link layer %d", int(a.link_layer))
	}
	return PortAttr{State: PortState(a.state), ActiveMTU: MTUBytes(int(a.active_mtu)), LID: uint16(a.lid), LinkLayer: ll, GIDTblLen: int(a.gid_tbl_len)}, nil
}

func (d *hwDevice) GIDs(port int) ([]GIDEntry, error) {
	pa, err := d.QueryPort(port)
	if err != nil {
		return nil, err
	}
	var out []GIDEntry
	for i := 0; i < pa.GIDTblLen; i++ {
		var g C.union_ibv_gid
		if C.ibv_query_gid(d.ctx, C.uint8_t(port), C.int(i), &g) != 0 {
			continue // unpopulated entries fail on some providers
		}
		var e GIDEntry
		e.Index = i
		copy(e.GID[:], C.GoBytes(unsafe.Pointer(&g), 16))
		if e.GID.IsZero() {
			continue
		}
		e.Type = gidType(d.name, port, i)
		out = append(out, e)
	}
	return out, nil
}

// gidType reads a GID's RoCE version where the system publishes it (Linux sysfs).
func gidType(dev string, port, index int) string {
	b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports", fmt.Sprint(port), "gid_attrs/types", fmt.Sprint(index)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (d *hwDevice) Close() error {
	if d.ctx == nil {
		return nil
	}
	rc := C.ibv_close_device(d.ctx)
	d.ctx = nil
	if rc != 0 {
		return fmt.Errorf("ibv_close_device %s: %w", d.name, syscall.Errno(rc))
	}
	return nil
}

type hwPD struct {
	d  *hwDevice
	pd *C.struct_ibv_pd
}

func (d *hwDevice) AllocPD() (PD, error) {
	pd, err := C.ibv_alloc_pd(d.ctx)
	if pd == nil {
		return nil, fmt.Errorf("ibv_alloc_pd: %v", err)
	}
	return &hwPD{d, pd}, nil
}

func (pd *hwPD) Close() error {
	if rc := C.ibv_dealloc_pd(pd.pd); rc != 0 {
		return fmt.Errorf("ibv_dealloc_pd: %w", syscall.Errno(rc))
	}
	return nil
}

type hwMR struct {
	mr  *C.struct_ibv_mr
	buf []byte // referenced while registered: the adapter holds its address
}

// RegMR registers Go memory: the collector never moves heap objects, and the MR keeps buf
// referenced so its pages stay this buffer's until deregistration.
func (pd *hwPD) RegMR(buf []byte, access Access) (MR, error) {
	if len(buf) == 0 {
		return nil, errors.New("ibv_reg_mr: empty buffer")
	}
	mr, err := C.ibv_reg_mr(pd.pd, unsafe.Pointer(unsafe.SliceData(buf)), C.size_t(len(buf)), C.int(access))
	if mr == nil {
		return nil, fmt.Errorf("ibv_reg_mr of %d bytes: %v (locked-memory limit? ulimit -l)", len(buf), err)
	}
	return &hwMR{mr: mr, buf: buf}, nil
}

func (m *hwMR) Addr() uint64 { return uint64(uintptr(m.mr.addr)) }
func (m *hwMR) Len() int     { return len(m.buf) }
func (m *hwMR) LKey() uint32 { return uint32(m.mr.lkey) }
func (m *hwMR) RKey() uint32 { return uint32(m.mr.rkey) }
func (m *hwMR) Close() error {
	if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
		return fmt.Errorf("ibv_dereg_mr: %w", syscall.Errno(rc))
	}
	m.buf = nil
	return nil
}

type hwCQ struct {
	cq  *C.struct_ibv_cq
	buf []C.struct_gorun_wc
}

func (d *hwDevice) CreateCQ(depth int) (CQ, error) {
	if d.maxCQE > 0 {
		depth = min(depth, d.maxCQE)
	}
	cq, err := C.ibv_create_cq(d.ctx, C.int(depth), nil, nil, 0)
	if cq == nil {
		return nil, fmt.Errorf("ibv_create_cq of %d entries: %v", depth, err)
	}
	return &hwCQ{cq: cq, buf: make([]C.struct_gorun_wc, 64)}, nil
}

func (cq *hwCQ) Poll(wcs []WC) (int, error) {
	n := min(len(wcs), len(cq.buf))
	got := int(C.gorun_poll(cq.cq, C.int(n), &cq.buf[0]))
	if got < 0 {
		return 0, fmt.Errorf("ibv_poll_cq returned %d", got)
	}
	for i, w := range cq.buf[:got] {
		wcs[i] = WC{WRID: uint64(w.wr_id), Status: WCStatus(w.status), Opcode: WCOpcode(w.opcode), ByteLen: uint32(w.byte_len),
			Imm: uint32(w.imm), HasImm: w.has_imm != 0, QPNum: uint32(w.qp_num), Vendor: uint32(w.vendor_err)}
	}
	return got, nil
}

func (cq *hwCQ) Close() error {
	if rc := C.ibv_destroy_cq(cq.cq); rc != 0 {
		return fmt.Errorf("ibv_destroy_cq: %w", syscall.Errno(rc))
	}
	return nil
}

type hwQP struct {
	qp  *C.struct_ibv_qp
	typ QPType
}

func (pd *hwPD) CreateQP(typ QPType, cq CQ, maxSend, maxRecv int) (QP, error) {
	hcq, ok := cq.(*hwCQ)
	if !ok {
		return nil, errors.New("ibv_create_qp: completion queue of another device")
	}
	qp, err := C.gorun_create_qp(pd.pd, C.int(typ), hcq.cq, C.int(maxSend), C.int(maxRecv))
	if qp == nil {
		// Apple's Thunderbolt RDMA refuses RC with errno 102 (EOPNOTSUPP there).
		return nil, fmt.Errorf("ibv_create_qp (%v): %w", typ, err)
	}
	return &hwQP{qp: qp, typ: typ}, nil
}

func (q *hwQP) Num() uint32  { return uint32(q.qp.qp_num) }
func (q *hwQP) Type() QPType { return q.typ }

func (q *hwQP) ToInit(port int, access Access) error {
	if rc := C.gorun_to_init(q.qp, C.int(port), C.int(access)); rc != 0 {
		return fmt.Errorf("modify QP %d to INIT: %w", q.Num(), syscall.Errno(rc))
	}
	return nil
}

func mtuEnum(bytes int) C.int {
	for e := 5; e >= 1; e-- {
		if MTUBytes(e) <= bytes {
			return C.int(e)
		}
	}
	return 1
}

func (q *hwQP) ToRTR(a RTRAttr) error {
	global := 0
	if a.Global {
		global = 1
	}
	rc := C.gorun_to_rtr(q.qp, C.int(boolInt(q.typ == RC)), mtuEnum(a.PathMTU), C.uint32_t(a.Remote.QPN), C.uint32_t(a.Remote.PSN),
		C.uint16_t(a.Remote.LID), C.int(global), (*C.uint8_t)(unsafe.Pointer(&a.Remote.GID[0])), C.int(a.SGIDIndex), C.int(a.Port))
	if rc != 0 {
		return fmt.Errorf("modify QP %d to RTR (remote QP %d, GID %v, sgid index %d): %w", q.Num(), a.Remote.QPN, a.Remote.GID, a.SGIDIndex, syscall.Errno(rc))
	}
	return nil
}

func (q *hwQP) ToRTS(a RTSAttr) error {
	if rc := C.gorun_to_rts(q.qp, C.int(boolInt(q.typ == RC)), C.uint32_t(a.PSN), C.int(a.Timeout), C.int(a.RetryCnt), C.int(a.RNRRetry)); rc != 0 {
		return fmt.Errorf("modify QP %d to RTS: %w", q.Num(), syscall.Errno(rc))
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (q *hwQP) PostSend(wr *SendWR) error {
	rc := C.gorun_post_send(q.qp, C.uint64_t(wr.WRID), C.int(wr.Op), C.uint64_t(wr.SGE.Addr), C.uint32_t(wr.SGE.Length), C.uint32_t(wr.SGE.LKey),
		C.uint32_t(wr.Imm), C.uint64_t(wr.RemoteAddr), C.uint32_t(wr.RKey), C.int(boolInt(wr.Signaled)))
	if rc != 0 {
		return fmt.Errorf("ibv_post_send on QP %d: %w", q.Num(), syscall.Errno(rc))
	}
	return nil
}

func (q *hwQP) PostRecv(wr *RecvWR) error {
	if rc := C.gorun_post_recv(q.qp, C.uint64_t(wr.WRID), C.uint64_t(wr.SGE.Addr), C.uint32_t(wr.SGE.Length), C.uint32_t(wr.SGE.LKey)); rc != 0 {
		return fmt.Errorf("ibv_post_recv on QP %d: %w", q.Num(), syscall.Errno(rc))
	}
	return nil
}

func (q *hwQP) Close() error {
	if rc := C.ibv_destroy_qp(q.qp); rc != 0 {
		return fmt.Errorf("ibv_destroy_qp: %w", syscall.Errno(rc))
	}
	return nil
}
