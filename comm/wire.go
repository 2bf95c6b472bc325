package comm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire format of the tcp transport. Every connection starts with a handshake in which both
// sides prove that they know the job's secret (see handshake.go); after that it carries frames,
// each a fixed header followed by Length payload bytes. Every field is checked before anything
// is allocated.

const (
	wireMagic = "GRUN"
	// wireVersion 2: hellos carry the sender's role and claimed identity and a 32-byte nonce,
	// and proofs are bound to both roles (version 1's were not: they could be reflected).
	wireVersion = 2

	helloSize  = 56
	proofSize  = sha256.Size
	headerSize = 40

	// eagerLimit: messages up to this size travel with their header and are buffered by the
	// receiver if no receive is posted; larger ones use rendezvous (RTS, CTS, DATA), so an
	// unexpected large message costs the receiver no memory.
	eagerLimit = 64 << 10
	// dataChunk bounds one DATA frame so that small messages are not stuck behind a huge one.
	dataChunk = 4 << 20
	// maxMessage bounds a single message's length (1 TiB).
	maxMessage = 1 << 40
	// maxWorld bounds the job size a hello may claim.
	maxWorld = 1 << 24
)

// Connection purposes carried in the hello.
const (
	connRendezvous = 1 // a rank registering at the rendezvous (rank 0's, or the launcher's)
	connMesh       = 2 // a data-plane link between two ranks
)

// Roles in the handshake: the side that dialed, the side that accepted.
const (
	roleDialer   = 1
	roleAcceptor = 2
)

// launcherID is the identity a launcher serving the rendezvous claims in its hello: it is no
// rank.
const launcherID = 0xFFFFFFFF

// hello opens every connection, one from each side.
type hello struct {
	kind  uint8
	role  uint8
	rank  uint32 // the sender's claimed identity: a rank, or launcherID
	size  uint32
	job   uint64 // fnv64 of the job id: catches a rank of another job before the proof does
	nonce [32]byte
}

// Layout: magic[4] version[2] kind[1] role[1] rank[4] size[4] job[8] nonce[32].
func (h *hello) marshal() []byte {
	b := make([]byte, helloSize)
	copy(b, wireMagic)
	binary.LittleEndian.PutUint16(b[4:], wireVersion)
	b[6] = h.kind
	b[7] = h.role
	binary.LittleEndian.PutUint32(b[8:], h.rank)
	binary.LittleEndian.PutUint32(b[12:], h.size)
	binary.LittleEndian.PutUint64(b[16:], h.job)
	copy(b[24:], h.nonce[:])
	return b
}

// who names the hello's claimed identity for messages.
func (h *hello) who() string {
	if h.rank == launcherID {
		return "the gorun launcher"
	}
	return fmt.Sprintf("rank %d", h.rank)
}

var (
	errBadMagic   = errors.New("not a gorun connection (bad magic)")
	errBadVersion = errors.New("unsupported gorun wire version")
)

func parseHello(b []byte) (hello, error) {
	var h hello
	if len(b) != helloSize {
		return h, fmt.Errorf("hello is %d bytes, want %d", len(b), helloSize)
	}
	if string(b[:4]) != wireMagic {
		return h, errBadMagic
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != wireVersion {
		return h, fmt.Errorf("%w: peer speaks version %d, this side %d", errBadVersion, v, wireVersion)
	}
	h.kind = b[6]
	if h.kind != connRendezvous && h.kind != connMesh {
		return h, fmt.Errorf("unknown connection kind %d", h.kind)
	}
	h.role = b[7]
	if h.role != roleDialer && h.role != roleAcceptor {
		return h, fmt.Errorf("unknown handshake role %d", h.role)
	}
	h.rank = binary.LittleEndian.Uint32(b[8:])
	h.size = binary.LittleEndian.Uint32(b[12:])
	if h.size == 0 || h.size > maxWorld {
		return h, fmt.Errorf("hello claims a job of %d ranks", h.size)
	}
	if h.rank == launcherID {
		// Only a launcher serving the rendezvous: it never dials, and holds no data link.
		if h.kind != connRendezvous || h.role != roleAcceptor {
			return h, fmt.Errorf("hello claims to be the launcher on a kind %d connection in role %d", h.kind, h.role)
		}
	} else if h.rank >= h.size {
		return h, fmt.Errorf("hello claims rank %d of %d", h.rank, h.size)
	}
	h.job = binary.LittleEndian.Uint64(b[16:])
	copy(h.nonce[:], b[24:])
	return h, nil
}

// Domain-separation labels of the two proofs of a handshake.
const (
	proofLabelDialer   = "gorun handshake v2: proof by the dialer\x00"
	proofLabelAcceptor = "gorun handshake v2: proof by the acceptor\x00"
)

// proof is the HMAC under the job secret of the prover's label and both hellos of the
// connection, the dialer's first. The hellos carry both roles, both claimed identities, the
// job and both nonces, so a proof is valid for this connection only (the nonces are fresh),
// for these two identities only, and only from the side whose label it has (so the acceptor's
// proof can never serve as a dialer's, nor the other way round).
func proof(secret []byte, prover uint8, dialerHello, acceptorHello []byte) []byte {
	m := hmac.New(sha256.New, secret)
	if prover == roleDialer {
		m.Write([]byte(proofLabelDialer))
	} else {
		m.Write([]byte(proofLabelAcceptor))
	}
	m.Write(dialerHello)
	m.Write(acceptorHello)
	return m.Sum(nil)
}

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
