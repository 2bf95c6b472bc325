package comm

import (
	"encoding/binary"

	"fmt"
)

// Wire format of the tcp transport. Every connection starts with the bootstrap handshake in
// which both sides prove that they know the job's secret (comm/internal/boot); after that it carries frames,
// each a fixed header followed by Length payload bytes. Every field is checked before anything
// is allocated.

const (
	headerSize = 40

	// eagerLimit: messages up to this size travel with their header and are buffered by the
	// receiver if no receive is posted; larger ones use rendezvous (RTS, CTS, DATA), so an
	// unexpected large message costs the receiver no memory.
	eagerLimit = 64 << 10
	// dataChunk bounds one DATA frame so that small messages are not stuck behind a huge one.
	dataChunk = 4 << 20
	// maxMessage bounds a single message's length (1 TiB).
	maxMessage = 1 << 40
)

// Frame types.
const (
	frameEager = 1 // header + payload: a whole message
	frameRTS   = 2 // request to send: a large message's envelope; ID names it at the sender
	frameCTS   = 3 // clear to send: ID = the sender's id, Offset = the receiver's id; flag discard
	frameData  = 4 // part of a large message: ID = the receiver's id, Offset = position
	framePing  = 5 // heartbeat on an idle link
	frameBye   = 6 // the sender finalized: nothing more will come
	// Shared-memory records only:
	frameFin = 7 // the receiver copied a large message itself (single copy): ID = the sender's id
	framePad = 8 // filler up to the end of a ring
)

const flagDiscard = 1 // CTS: the receive was truncated to nothing useful; send no data

type header struct {
	typ    uint8
	flags  uint8
	tag    int32
	ctx    uint64
	length uint64
	id     uint64
	offset uint64
}

func (h *header) put(b []byte) {
	b[0] = h.typ
	b[1] = h.flags
	b[2], b[3] = 0, 0
	binary.LittleEndian.PutUint32(b[4:], uint32(h.tag))
	binary.LittleEndian.PutUint64(b[8:], h.ctx)
	binary.LittleEndian.PutUint64(b[16:], h.length)
	binary.LittleEndian.PutUint64(b[24:], h.id)
	binary.LittleEndian.PutUint64(b[32:], h.offset)
}

// parseHeader decodes and validates a tcp frame header: type, flags, tag range, and the
// payload length each type allows.
func parseHeader(b []byte) (header, error) { return parseHeaderLimits(b, eagerLimit, dataChunk) }

// parseHeaderLimits validates with a transport's own limits: eager messages up to eagerMax
// bytes (larger ones must come by rendezvous), data frames up to dataMax.
func parseHeaderLimits(b []byte, eagerMax, dataMax uint64) (header, error) {
	var h header
	if len(b) != headerSize {
		return h, fmt.Errorf("frame header is %d bytes, want %d", len(b), headerSize)
	}
	h.typ, h.flags = b[0], b[1]
	if b[2] != 0 || b[3] != 0 {
		return h, fmt.Errorf("frame header reserved bytes are %d,%d, want 0", b[2], b[3])
	}
	h.tag = int32(binary.LittleEndian.Uint32(b[4:]))
	h.ctx = binary.LittleEndian.Uint64(b[8:])
	h.length = binary.LittleEndian.Uint64(b[16:])
	h.id = binary.LittleEndian.Uint64(b[24:])
	h.offset = binary.LittleEndian.Uint64(b[32:])
	switch h.typ {
	case frameEager, frameRTS:
		if h.tag < 0 || int(h.tag) >= MaxTag {
			return h, fmt.Errorf("frame tag %d out of range", h.tag)
		}
		if h.flags != 0 {
			return h, fmt.Errorf("frame type %d has flags %#x", h.typ, h.flags)
		}
		if h.typ == frameEager && h.length > eagerMax {
			return h, fmt.Errorf("eager frame of %d bytes exceeds the %d-byte limit", h.length, eagerMax)
		}
		if h.typ == frameRTS && (h.length <= eagerMax || h.length > maxMessage) {
			return h, fmt.Errorf("rendezvous message of %d bytes outside (%d, %d]", h.length, eagerMax, uint64(maxMessage))
		}
	case frameCTS:
		if h.length != 0 || h.flags&^flagDiscard != 0 {
			return h, fmt.Errorf("malformed CTS frame (length %d, flags %#x)", h.length, h.flags)
		}
	case frameData:
		if h.length == 0 || h.length > dataMax || h.flags != 0 || h.offset > maxMessage {
			return h, fmt.Errorf("malformed DATA frame (length %d, offset %d, flags %#x)", h.length, h.offset, h.flags)
		}
	case framePing, frameBye:
		if h.length != 0 || h.flags != 0 {
			return h, fmt.Errorf("malformed control frame type %d (length %d)", h.typ, h.length)
		}
	default:
		return h, fmt.Errorf("unknown frame type %d", h.typ)
	}
	return h, nil
}
