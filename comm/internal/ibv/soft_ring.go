//go:build linux || darwin

package ibv

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A softRing is the "wire" of one direction of a software queue pair: a single-producer,
// single-consumer ring in a shared file. The consumer (the receiving queue pair) creates it; the
// producer (its connected peer) maps it when it moves to RTR. Besides the records, the header
// carries what a real adapter learns from acknowledgements: how far the consumer has processed
// (RC completions), whether it is waiting for a receive to be posted (RNR), a negative
// acknowledgement, and when it was last alive (so RC senders time out on a dead peer).
type softRing struct {
	mem  []byte
	size uint64 // data bytes
	path string
}

const (
	ringMagic    = 0x766269676e69725f // "_ringibv"
	ringHdrSize  = 4096
	ringOffMagic = 0
	ringOffSize  = 8
	ringOffHead  = 64  // producer: bytes written (monotonic)
	ringOffTail  = 128 // consumer: bytes consumed (monotonic)
	ringOffAlive = 192 // consumer: unix nanos of its last poll
	ringOffRNR   = 200 // consumer: 1 while a SEND waits for a posted receive
	ringOffNak   = 256 // consumer: position+1 of a refused record
	ringOffNakSt = 264 // consumer: the WCStatus the sender gets for it
	ringOffGone  = 272 // consumer: 1 once its queue pair is destroyed

	recHdrSize = 32
	recWrap    = 0xffffffff // length word meaning "continue at the start of the ring"
)

// record is one packet on the wire.
type record struct {
	op      Opcode
	imm     uint32
	rkey    uint32
	raddr   uint64
	psn     uint32
	payload []byte
	pos     uint64 // ring position of the record's start
	next    uint64 // ring position after it
}

func createRing(path string, size uint64) (*softRing, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(ringHdrSize + size)); err != nil {
		os.Remove(path)
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(ringHdrSize+size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	r := &softRing{mem: mem, size: size, path: path}
	binary.LittleEndian.PutUint64(mem[ringOffSize:], size)
	atomic.StoreUint64(r.word(ringOffMagic), ringMagic)
	return r, nil
}

func openRing(path string) (*softRing, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() <= ringHdrSize {
		return nil, fmt.Errorf("%s: %d bytes is no ring", path, st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	r := &softRing{mem: mem, path: path, size: uint64(st.Size()) - ringHdrSize}
	if atomic.LoadUint64(r.word(ringOffMagic)) != ringMagic || binary.LittleEndian.Uint64(mem[ringOffSize:]) != r.size {
		unix.Munmap(mem)
		return nil, fmt.Errorf("%s: not a softibv ring", path)
	}
	return r, nil
}

func (r *softRing) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *softRing) load(off int) uint64  { return atomic.LoadUint64(r.word(off)) }
func (r *softRing) store(off int, v uint64) {
	atomic.StoreUint64(r.word(off), v)
}

func (r *softRing) close() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// write appends a record; false when the ring lacks room (the caller retries later).
func (r *softRing) write(rec *record) (start, end uint64, ok bool) {
	need := align8(recHdrSize + uint64(len(rec.payload)))
	head, tail := r.load(ringOffHead), r.load(ringOffTail)
	pos := head
	if room := r.size - head%r.size; room < need {
		pos += room // skip to the start, marking the gap
	}
	if pos+need-tail > r.size {
		return 0, 0, false
	}
	if pos != head {
		binary.LittleEndian.PutUint32(r.mem[ringHdrSize+head%r.size:], recWrap)
	}
	b := r.mem[ringHdrSize+pos%r.size:]
	binary.LittleEndian.PutUint32(b[0:], uint32(recHdrSize+len(rec.payload)))
	b[4], b[5], b[6], b[7] = byte(rec.op), 0, 0, 0
	binary.LittleEndian.PutUint32(b[8:], rec.imm)
	binary.LittleEndian.PutUint32(b[12:], rec.rkey)
	binary.LittleEndian.PutUint64(b[16:], rec.raddr)
	binary.LittleEndian.PutUint32(b[24:], rec.psn)
	binary.LittleEndian.PutUint32(b[28:], uint32(len(rec.payload)))
	copy(b[recHdrSize:], rec.payload)
	r.store(ringOffHead, pos+need)
	return pos, pos + need, true
}

// peek returns the next record without consuming it; payload aliases the ring.
func (r *softRing) peek() (record, bool, error) {
	tail, head := r.load(ringOffTail), r.load(ringOffHead)
	if tail == head {
		return record{}, false, nil
	}
	if head < tail || head-tail > r.size {
		return record{}, false, fmt.Errorf("ring positions corrupt (head %d, tail %d)", head, tail)
	}
	pos := tail
	if r.size-pos%r.size < recHdrSize || binary.LittleEndian.Uint32(r.mem[ringHdrSize+pos%r.size:]) == recWrap {
		pos += r.size - pos%r.size
		if pos == head {
			return record{}, false, nil
		}
	}
	b := r.mem[ringHdrSize+pos%r.size:]
	total := uint64(binary.LittleEndian.Uint32(b))
	plen := uint64(binary.LittleEndian.Uint32(b[28:]))
	if total != recHdrSize+plen || pos+align8(total) > head || pos%r.size+total > r.size {
		return record{}, false, fmt.Errorf("malformed record at %d (length %d, payload %d)", pos, total, plen)
	}
	return record{
		op: Opcode(b[4]), imm: binary.LittleEndian.Uint32(b[8:]), rkey: binary.LittleEndian.Uint32(b[12:]),
		raddr: binary.LittleEndian.Uint64(b[16:]), psn: binary.LittleEndian.Uint32(b[24:]),
		payload: b[recHdrSize : recHdrSize+plen], pos: pos, next: pos + align8(total),
	}, true, nil
}

func (r *softRing) advance(rec record) { r.store(ringOffTail, rec.next) }
