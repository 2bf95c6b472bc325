// Package wire is the frame format comm's transports share: a fixed 40-byte header (Header)
// followed by Length payload bytes, its frame types and flags, and the parser that validates a
// header before anything is allocated for it. The TCP transport sends frames as they are; the
// shared-memory and verbs transports carry the same header in their ring and receive-buffer
// records. The protocol that these frames implement (matching, rendezvous, completion) is comm's.
package wire

import (
	"encoding/binary"
	"fmt"
)

const (
	// HeaderSize is an encoded Header's length.
	HeaderSize = 40
	// MaxMessage bounds a single message's length (1 TiB).
	MaxMessage = 1 << 40
	// MaxTag bounds the tags of Eager and RTS frames: 0 <= tag < MaxTag (comm.MaxTag).
	MaxTag = 1 << 30
)

// Frame types.
const (
	Eager = 1 // header + payload: a whole message
	RTS   = 2 // request to send: a large message's envelope; ID names it at the sender
	CTS   = 3 // clear to send: ID = the sender's id, Offset = the receiver's id; flag FlagDiscard
	Data  = 4 // part of a large message: ID = the receiver's id, Offset = position
	Ping  = 5 // heartbeat on an idle link
	Bye   = 6 // the sender finalized: nothing more will come
	// Shared-memory records only:
	Fin     = 7  // the receiver copied a large message itself (single copy): ID = the sender's id
	Pad     = 8  // filler up to the end of a ring
	Split   = 16 // receiver -> sender: ID = send id, Ctx = receive id, Offset = buffer address, Length = sender's part's start
	Written = 17 // sender -> receiver: ID = receive id, Length = bytes written
)

// Flags.
const (
	// FlagDiscard (CTS): the receive was truncated to nothing useful; send no data.
	FlagDiscard = 1
	// FlagSenderWaits (RTS, shared memory): the sender polls until the message is taken.
	FlagSenderWaits = 2
	// FlagSplitFailed (Written): the sender could not write into the receiver.
	FlagSplitFailed = 1
)

// Header is a frame's header. Encoded little-endian: Type, Flags, two reserved zero bytes,
// Tag, Ctx, Length, ID, Offset.
type Header struct {
	Type   uint8
	Flags  uint8
	Tag    int32
	Ctx    uint64
	Length uint64
	ID     uint64
	Offset uint64
}

// Put encodes h into b[:HeaderSize].
func (h *Header) Put(b []byte) {
	b[0] = h.Type
	b[1] = h.Flags
	b[2], b[3] = 0, 0
	binary.LittleEndian.PutUint32(b[4:], uint32(h.Tag))
	binary.LittleEndian.PutUint64(b[8:], h.Ctx)
	binary.LittleEndian.PutUint64(b[16:], h.Length)
	binary.LittleEndian.PutUint64(b[24:], h.ID)
	binary.LittleEndian.PutUint64(b[32:], h.Offset)
}

// Parse decodes and validates a frame header with a transport's own limits: type, flags, tag
// range, eager messages up to eagerMax bytes (larger ones must come by rendezvous), data frames
// up to dataMax. It accepts the types and flags of the TCP and verbs protocols; the
// shared-memory ring validates its own record types before it defers to Parse.
func Parse(b []byte, eagerMax, dataMax uint64) (Header, error) {
	var h Header
	if len(b) != HeaderSize {
		return h, fmt.Errorf("frame header is %d bytes, want %d", len(b), HeaderSize)
	}
	h.Type, h.Flags = b[0], b[1]
	if b[2] != 0 || b[3] != 0 {
		return h, fmt.Errorf("frame header reserved bytes are %d,%d, want 0", b[2], b[3])
	}
	h.Tag = int32(binary.LittleEndian.Uint32(b[4:]))
	h.Ctx = binary.LittleEndian.Uint64(b[8:])
	h.Length = binary.LittleEndian.Uint64(b[16:])
	h.ID = binary.LittleEndian.Uint64(b[24:])
	h.Offset = binary.LittleEndian.Uint64(b[32:])
	switch h.Type {
	case Eager, RTS:
		if h.Tag < 0 || int(h.Tag) >= MaxTag {
			return h, fmt.Errorf("frame tag %d out of range", h.Tag)
		}
		if h.Flags != 0 {
			return h, fmt.Errorf("frame type %d has flags %#x", h.Type, h.Flags)
		}
		if h.Type == Eager && h.Length > eagerMax {
			return h, fmt.Errorf("eager frame of %d bytes exceeds the %d-byte limit", h.Length, eagerMax)
		}
		if h.Type == RTS && (h.Length <= eagerMax || h.Length > MaxMessage) {
			return h, fmt.Errorf("rendezvous message of %d bytes outside (%d, %d]", h.Length, eagerMax, uint64(MaxMessage))
		}
	case CTS:
		if h.Length != 0 || h.Flags&^FlagDiscard != 0 {
			return h, fmt.Errorf("malformed CTS frame (length %d, flags %#x)", h.Length, h.Flags)
		}
	case Data:
		if h.Length == 0 || h.Length > dataMax || h.Flags != 0 || h.Offset > MaxMessage {
			return h, fmt.Errorf("malformed DATA frame (length %d, offset %d, flags %#x)", h.Length, h.Offset, h.Flags)
		}
	case Ping, Bye:
		if h.Length != 0 || h.Flags != 0 {
			return h, fmt.Errorf("malformed control frame type %d (length %d)", h.Type, h.Length)
		}
	default:
		return h, fmt.Errorf("unknown frame type %d", h.Type)
	}
	return h, nil
}
