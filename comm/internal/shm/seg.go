//go:build linux || darwin

package shm

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorun-hpc/gorun/comm/internal/wire"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// A shared-memory segment belongs to one rank (its owner, the consumer): it holds, per peer rank
// on the same host that sends to it, one single-producer single-consumer ring and one fastbox
// (a small ring of the same format for small messages, whose few cache lines stay in the two
// cores' caches where the large ring's laps would not; comm/shm.go says when each is used), and the
// owner's wake-up word. The owner creates it; peers map it, write into their own ring, and the
// owner unlinks the file as soon as every peer has mapped it, so a crash leaves nothing behind.
//
// Layout (little-endian):
//
//	0    magic "GRSHM001"
//	8    version u32, ring count u32
//	16   ring capacity u64 (bytes of record space per ring, a power of two)
//	24   owner pid u64
//	32   job hash u64
//	40   fastbox capacity u64 (a power of two)
//	64   wake sequence u32 (futex word: bumped by producers after each record)
//	128  owner's sleeping threads u32 (producers issue a futex wake when it is not 0)
//	136  owner's doorbell armed u32 (a producer that swaps it from 1 to 0 rings the bell; bell.go)
//	192  producer world rank of ring i, u32 each
//	...  per producer: its ring, ringHeader bytes (consumer head at +0, producer tail at +64) then
//	     capacity bytes of records (see tryWrite); then its fastbox, laid out the same
//
// EagerLimit is the largest eager message a ring record carries: larger messages go by
// request-to-send, and a record claiming more is malformed.
const EagerLimit = 16 << 10

const (
	segMagic      = "GRSHM001"
	segVersion    = 4
	segTableOff   = 192
	segMaxRings   = 4096
	ringHeader    = 128
	recordAlign   = 64
	minRingCap    = 64 << 10
	maxRingCap    = 1 << 30
	minFastCap    = 4 << 10
	maxFastCap    = 1 << 20
	segWakeOff    = 64
	segSleepOff   = 128
	segBellOff    = 136
	segRingsAlign = 4096
)

// Segment is a mapped shared-memory segment (see the layout above): Wake, Sleep and Bell
// point at its owner's wake-up words.
type Segment struct {
	Path   string
	mem    []byte
	nrings int
	cap    uint64
	fcap   uint64 // fastbox capacity
	pid    int
	Wake   *uint32
	Sleep  *uint32
	Bell   *uint32
	rings  []*Ring
	fast   []*Ring // fast[i]: the fastbox of the producer of rings[i]
}

// ring is one SPSC queue of variable-size records inside a segment.
type Ring struct {
	head *uint64 // consumer position (bytes consumed, ever)
	tail *uint64 // producer position (bytes produced, ever)
	data []byte
	cap  uint64
	Mu   sync.Mutex // serializes this process's producers (several goroutines may send)
	// fast: a fastbox, which holds eager records only.
	fast bool

	// Process-local copies: the producer's (under Mu) and the consumer's (under the
	// transport's pollMu) own positions, and the head as the producer last read it.
	prodTail, headCache uint64
	consHead            uint64
	pubHead             uint64 // the consumer's position as last stored in head
}

// segPopulateMax: segments up to this size are mapped with their pages allocated and mapped
// up front (on Linux), by the owner and by each peer. Otherwise every 4 KiB page of a ring
// faults on the first lap in the producer and again in the consumer, which would dominate the
// mean latency of a short run of small messages. Larger segments (many ranks on one host) stay lazy, as
// pairs that never talk need not commit their rings.
const segPopulateMax = 64 << 20

func populateFlag(size int) int {
	if size <= segPopulateMax {
		return mapPopulate
	}
	return 0
}

func segSize(nrings int, capacity, fastCap uint64) int {
	ringsOff := alignUp(segTableOff+4*nrings, segRingsAlign)
	return ringsOff + nrings*(2*ringHeader+int(capacity)+int(fastCap))
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// CreateSegment creates, sizes and maps this rank's segment, with one ring and one fastbox per
// producer rank; the caller unlinks its file once every producer has mapped it.
func CreateSegment(jobID string, rank int, producers []int, capacity, fastCap uint64, jobHash uint64) (*Segment, error) {
	path := filepath.Join(jobenv.SegmentDir(), fmt.Sprintf("%s%d", jobenv.SegmentPrefix(jobID), rank))
	size := segSize(len(producers), capacity, fastCap)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shared-memory segment %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("sizing shared-memory segment %s to %d bytes: %w", path, size, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|populateFlag(size))
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("mapping shared-memory segment %s: %w", path, err)
	}
	copy(mem, segMagic)
	binary.LittleEndian.PutUint32(mem[8:], segVersion)
	binary.LittleEndian.PutUint32(mem[12:], uint32(len(producers)))
	binary.LittleEndian.PutUint64(mem[16:], capacity)
	binary.LittleEndian.PutUint64(mem[24:], uint64(os.Getpid()))
	binary.LittleEndian.PutUint64(mem[32:], jobHash)
	binary.LittleEndian.PutUint64(mem[40:], fastCap)
	for i, p := range producers {
		binary.LittleEndian.PutUint32(mem[segTableOff+4*i:], uint32(p))
	}
	s, err := parseSegment(path, mem, os.Getpid(), jobHash)
	if err != nil {
		unix.Munmap(mem)
		os.Remove(path)
		return nil, err
	}
	return s, nil
}

// OpenSegment maps a peer's segment and validates its header before touching anything else.
func OpenSegment(path string, ownerPID int, jobHash uint64) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening peer segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < segTableOff || st.Size() > int64(segSize(segMaxRings, maxRingCap, maxFastCap)) {
		return nil, fmt.Errorf("peer segment %s has an impossible size %d", path, st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|populateFlag(int(st.Size())))
	if err != nil {
		return nil, fmt.Errorf("mapping peer segment %s: %w", path, err)
	}
	s, err := parseSegment(path, mem, ownerPID, jobHash)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return s, nil
}

// parseSegment checks a mapped segment's header against its length (a corrupt or truncated
// header is an error, never a wild read) and builds its rings.
func parseSegment(path string, mem []byte, ownerPID int, jobHash uint64) (*Segment, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shared-memory segment %s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(mem) < segTableOff || string(mem[:8]) != segMagic {
		return nil, bad("bad magic or truncated header")
	}
	if v := binary.LittleEndian.Uint32(mem[8:]); v != segVersion {
		return nil, bad("version %d, want %d", v, segVersion)
	}
	n := int(binary.LittleEndian.Uint32(mem[12:]))
	capacity := binary.LittleEndian.Uint64(mem[16:])
	if n < 1 || n > segMaxRings {
		return nil, bad("ring count %d out of range", n)
	}
	if capacity < minRingCap || capacity > maxRingCap || capacity&(capacity-1) != 0 {
		return nil, bad("ring capacity %d is not a power of two in [%d, %d]", capacity, minRingCap, maxRingCap)
	}
	fcap := binary.LittleEndian.Uint64(mem[40:])
	if fcap < minFastCap || fcap > maxFastCap || fcap&(fcap-1) != 0 {
		return nil, bad("fastbox capacity %d is not a power of two in [%d, %d]", fcap, minFastCap, maxFastCap)
	}
	if need := segSize(n, capacity, fcap); need > len(mem) {
		return nil, bad("header describes %d bytes but the segment has %d", need, len(mem))
	}
	if pid := binary.LittleEndian.Uint64(mem[24:]); pid != uint64(ownerPID) {
		return nil, bad("owner pid %d, expected %d", pid, ownerPID)
	}
	if jh := binary.LittleEndian.Uint64(mem[32:]); jh != jobHash {
		return nil, bad("belongs to another job")
	}
	s := &Segment{Path: path, mem: mem, nrings: n, cap: capacity, fcap: fcap, pid: ownerPID,
		Wake:  (*uint32)(unsafe.Pointer(&mem[segWakeOff])),
		Sleep: (*uint32)(unsafe.Pointer(&mem[segSleepOff])),
		Bell:  (*uint32)(unsafe.Pointer(&mem[segBellOff])),
	}
	off := alignUp(segTableOff+4*n, segRingsAlign)
	for i := 0; i < n; i++ {
		base := off + i*(2*ringHeader+int(capacity)+int(fcap))
		s.rings = append(s.rings, mapRing(mem, base, capacity))
		fb := mapRing(mem, base+ringHeader+int(capacity), fcap)
		fb.fast = true
		s.fast = append(s.fast, fb)
	}
	return s, nil
}

// mapRing is the ring of the given capacity whose header starts at mem[base].
func mapRing(mem []byte, base int, capacity uint64) *Ring {
	rg := &Ring{
		head: (*uint64)(unsafe.Pointer(&mem[base])),
		tail: (*uint64)(unsafe.Pointer(&mem[base+64])),
		data: mem[base+ringHeader : base+ringHeader+int(capacity) : base+ringHeader+int(capacity)],
		cap:  capacity,
	}
	// A mapping starts where the ring's owner and its producer left it (fresh segments: 0).
	rg.consHead = atomic.LoadUint64(rg.head)
	rg.prodTail = atomic.LoadUint64(rg.tail)
	rg.headCache = rg.consHead
	rg.pubHead = rg.consHead
	return rg
}

// ringFrom returns the ring and the fastbox in s that world rank producer writes into.
func (s *Segment) RingFrom(producer int) (*Ring, *Ring, error) {
	for i := 0; i < s.nrings; i++ {
		if int(binary.LittleEndian.Uint32(s.mem[segTableOff+4*i:])) == producer {
			return s.rings[i], s.fast[i], nil
		}
	}
	return nil, nil, fmt.Errorf("shared-memory segment %s has no ring for rank %d", s.Path, producer)
}

// Close unmaps the segment.
func (s *Segment) Close() {
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
}

// Drained reports whether the consumer has taken every record this process produced (one
// load of the consumer's head). The caller holds r.Mu.
func (r *Ring) Drained() bool { return atomic.LoadUint64(r.head) == r.prodTail }

// maxRecord is the largest record (stamp, header and payload) a ring of this capacity takes: a
// quarter of it, so that a full-size record always fits once the consumer has caught up.
func (r *Ring) MaxRecord() int { return int(r.cap / 4) }

// A record is a stamp word, a frame header and the payload, padded to recordAlign. The producer
// writes the stamp last: it is the record's position in the ring plus one, so the consumer polls
// the one cache line the record starts in (a stale record left from the previous lap carries
// another position) and never reads the producer's tail, and the producer reads the consumer's
// head only when its cached copy says the ring is full. A message then costs one cache-line
// transfer each way instead of one per shared counter.
//
// A fastbox's records carry eager messages (and pads) only, with a shorter header (fastHeader:
// type, tag, context and length), so that a message of up to 32 bytes fills one cache
// line with its stamp: the consumer that sees the stamp has the message.
const (
	recordStamp  = 8
	RecordHeader = recordStamp + wire.HeaderSize
	fastHeader   = 24
	fastRecord   = recordStamp + fastHeader
)

// hdrLen is how many bytes precede a record's payload in r (stamp and header).
func (r *Ring) hdrLen() uint64 {
	if r.fast {
		return fastRecord
	}
	return RecordHeader
}

// size is the ring space a record of n payload bytes takes in r.
func (r *Ring) size(n uint64) uint64 { return (r.hdrLen() + n + recordAlign - 1) &^ (recordAlign - 1) }

// putFast writes an eager or pad record's header in a fastbox's format.
func putFast(b []byte, h *wire.Header) {
	b[0], b[1], b[2], b[3] = h.Type, 0, 0, 0
	binary.LittleEndian.PutUint32(b[4:], uint32(h.Tag))
	binary.LittleEndian.PutUint64(b[8:], h.Ctx)
	binary.LittleEndian.PutUint64(b[16:], h.Length) // < 2^32: a fastbox is at most maxFastCap
}

// parseFast validates a fastbox record's header: an eager message within the fastbox's
// largest record, or a pad within the fastbox.
func parseFast(b []byte, r *Ring) (wire.Header, error) {
	h := wire.Header{Type: b[0], Flags: b[1], Tag: int32(binary.LittleEndian.Uint32(b[4:])),
		Ctx: binary.LittleEndian.Uint64(b[8:]), Length: binary.LittleEndian.Uint64(b[16:])}
	switch {
	case h.Flags != 0 || b[2] != 0 || b[3] != 0:
		return h, fmt.Errorf("fastbox record with flags or reserved bytes %#x %#x %#x", b[1], b[2], b[3])
	case h.Type == wire.Eager:
		if h.Tag < 0 || int(h.Tag) >= wire.MaxTag || h.Length > uint64(r.MaxRecord()-fastRecord) {
			return h, fmt.Errorf("fastbox message of %d bytes (tag %d) out of range", h.Length, h.Tag)
		}
	case h.Type == wire.Pad:
		if h.Length > r.cap {
			return h, fmt.Errorf("fastbox pad of %d bytes", h.Length)
		}
	default:
		return h, fmt.Errorf("record type %d in a fastbox", h.Type)
	}
	return h, nil
}

// tryWrite appends one record (header and payload), or reports false when the ring lacks
// room. The caller holds r.Mu.
func (r *Ring) TryWrite(h *wire.Header, payload []byte) bool {
	need, hl := r.size(uint64(len(payload))), r.hdrLen()
	tail := r.prodTail
	idx := tail % r.cap
	room := need
	if idx+need > r.cap {
		room = r.cap - idx + need // a pad record to the end, then the record at the start
	}
	if r.cap-(tail-r.headCache) < room {
		r.headCache = atomic.LoadUint64(r.head)
		if r.cap-(tail-r.headCache) < room {
			return false
		}
	}
	if idx+need > r.cap {
		// The record would straddle the end: fill the rest with a pad record and wrap.
		pad := r.cap - idx
		r.putHeader(idx, &wire.Header{Type: wire.Pad, Length: pad - hl})
		r.stamp(idx, tail)
		tail += pad
		idx = 0
	}
	r.putHeader(idx, h)
	copy(r.data[idx+hl:], payload)
	r.prodTail = tail + need
	if !r.fast {
		atomic.StoreUint64(r.tail, r.prodTail) // for inspection only: the consumer reads stamps
	}
	r.stamp(idx, tail)
	return true
}

// putHeader writes the header of the record at idx.
func (r *Ring) putHeader(idx uint64, h *wire.Header) {
	if r.fast {
		putFast(r.data[idx+recordStamp:idx+fastRecord], h)
		return
	}
	h.Put(r.data[idx+recordStamp : idx+RecordHeader])
}

// stamp publishes the record at idx, produced at position pos (after its contents: the atomic
// store orders them before it).
func (r *Ring) stamp(idx, pos uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.data[idx])), pos+1)
}

// ready reports whether a record waits at the consumer's position (one load of the line the
// next record starts in).
func (r *Ring) Ready() bool {
	head := r.consHead
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.data[head%r.cap]))) == head+1
}

// peek returns the next record, or ok=false when the ring is empty. The record's bytes stay
// valid until advance. A record that does not fit the ring's bounds is an error.
func (r *Ring) Peek() (h wire.Header, payload []byte, ok bool, err error) {
	for {
		if !r.Ready() {
			return h, nil, false, nil
		}
		head := r.consHead
		idx := head % r.cap
		hl := r.hdrLen()
		if idx+hl > r.cap {
			return h, nil, false, fmt.Errorf("record at %d overruns the ring", idx)
		}
		if r.fast {
			h, err = parseFast(r.data[idx+recordStamp:idx+hl], r)
		} else {
			h, err = parseShmHeader(r.data[idx+recordStamp:idx+hl], r)
		}
		if err != nil {
			return h, nil, false, err
		}
		n := recordPayload(h)
		need := r.size(n)
		if n > r.cap || idx+need > r.cap {
			return h, nil, false, fmt.Errorf("record of %d bytes overruns the ring", n)
		}
		if h.Type == wire.Pad {
			r.consHead = head + need
			r.publish()
			continue
		}
		return h, r.data[idx+hl : idx+hl+n], true, nil
	}
}

// advance consumes the record peek returned.
func (r *Ring) Advance(h wire.Header) {
	r.consHead += r.size(recordPayload(h))
	r.publish()
}

// publish stores the consumer's position for the producer. A ring's producer reads it to learn
// that the ring is drained (see comm's shmPeer.put), so every move is stored; a fastbox's reads it only
// when it seems full, so a quarter of it at a time is enough (it then sees at most that much
// less room), and the consumer saves a locked store per record.
func (r *Ring) publish() {
	if r.fast && r.consHead-r.pubHead < r.cap/4 {
		return
	}
	r.pubHead = r.consHead
	atomic.StoreUint64(r.head, r.consHead)
}

// recordPayload is how many bytes follow a record's header in the ring: an RTS's length is
// the message's, whose bytes stay with the sender.
func recordPayload(h wire.Header) uint64 {
	switch h.Type {
	case wire.Eager, wire.Data, wire.Pad:
		return h.Length
	}
	return 0
}

func (r *Ring) empty() bool { return !r.Ready() }

// parseShmHeader validates a ring record's header: the types the shared-memory protocol uses,
// and lengths within what the ring can hold.
func parseShmHeader(b []byte, r *Ring) (wire.Header, error) {
	switch b[0] {
	case wire.Split, wire.Written:
		h := wire.Header{Type: b[0], Flags: b[1], Ctx: binary.LittleEndian.Uint64(b[8:]), Length: binary.LittleEndian.Uint64(b[16:]),
			ID: binary.LittleEndian.Uint64(b[24:]), Offset: binary.LittleEndian.Uint64(b[32:])}
		if h.Length == 0 || h.Length > wire.MaxMessage || (h.Type == wire.Split && h.Flags != 0) || h.Flags&^wire.FlagSplitFailed != 0 {
			return h, fmt.Errorf("malformed record type %d (length %d, flags %#x)", h.Type, h.Length, h.Flags)
		}
		return h, nil
	case wire.RTS:
		if b[1] == wire.FlagSenderWaits { // the one flag an RTS takes over shared memory
			var c [wire.HeaderSize]byte
			copy(c[:], b)
			c[1] = 0
			h, err := wire.Parse(c[:], EagerLimit, uint64(r.MaxRecord()-RecordHeader))
			h.Flags = wire.FlagSenderWaits
			return h, err
		}
	case wire.Pad, wire.Fin:
		h := wire.Header{Type: b[0], Flags: b[1], Length: binary.LittleEndian.Uint64(b[16:]), ID: binary.LittleEndian.Uint64(b[24:])}
		if h.Flags != 0 || (h.Type == wire.Fin && h.Length != 0) || h.Length > r.cap {
			return h, fmt.Errorf("malformed record type %d (length %d)", h.Type, h.Length)
		}
		return h, nil
	}
	return wire.Parse(b, EagerLimit, uint64(r.MaxRecord()-RecordHeader))
}
