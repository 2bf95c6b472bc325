package boot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Every connection of a job (the rendezvous and every rank-to-rank link) opens with a
// handshake in which both sides prove that they know the job's secret (handshake.go): each
// side sends a hello, then a proof. Every field is checked before anything is allocated. What
// a link carries after the handshake is its transport's own (comm/internal/wire for TCP).

const (
	wireMagic = "GRUN"
	// wireVersion 2: hellos carry the sender's role and claimed identity and a 32-byte nonce,
	// and proofs are bound to both roles (version 1's were not: they could be reflected).
	wireVersion = 2

	// HelloSize is the length of a marshalled hello.
	HelloSize = 56
	// ProofSize is the length of a proof.
	ProofSize = sha256.Size
	// MaxWorld bounds the job size a hello may claim.
	MaxWorld = 1 << 24
)

// Connection purposes carried in the hello.
const (
	ConnRendezvous = 1 // a rank registering at the rendezvous (rank 0's, or the launcher's)
	ConnMesh       = 2 // a data-plane link between two ranks
)

// Roles in the handshake: the side that dialed, the side that accepted.
const (
	RoleDialer   = 1
	RoleAcceptor = 2
)

// LauncherID is the identity a launcher serving the rendezvous claims in its hello: it is no
// rank.
const LauncherID = 0xFFFFFFFF

// Hello opens every connection, one from each side.
type Hello struct {
	Kind  uint8  // ConnRendezvous or ConnMesh
	Role  uint8  // RoleDialer or RoleAcceptor
	Rank  uint32 // the sender's claimed identity: a rank, or LauncherID
	Size  uint32
	Job   uint64 // Fnv64 of the job id: catches a rank of another job before the proof does
	Nonce [32]byte
}

// Marshal encodes the hello. Layout: magic[4] version[2] kind[1] role[1] rank[4] size[4] job[8] nonce[32].
func (h *Hello) Marshal() []byte {
	b := make([]byte, HelloSize)
	copy(b, wireMagic)
	binary.LittleEndian.PutUint16(b[4:], wireVersion)
	b[6] = h.Kind
	b[7] = h.Role
	binary.LittleEndian.PutUint32(b[8:], h.Rank)
	binary.LittleEndian.PutUint32(b[12:], h.Size)
	binary.LittleEndian.PutUint64(b[16:], h.Job)
	copy(b[24:], h.Nonce[:])
	return b
}

// Who names the hello's claimed identity for messages.
func (h *Hello) Who() string {
	if h.Rank == LauncherID {
		return "the gorun launcher"
	}
	return fmt.Sprintf("rank %d", h.Rank)
}

var (
	errBadMagic   = errors.New("not a gorun connection (bad magic)")
	errBadVersion = errors.New("unsupported gorun wire version")
)

// ParseHello decodes and checks a hello.
func ParseHello(b []byte) (Hello, error) {
	var h Hello
	if len(b) != HelloSize {
		return h, fmt.Errorf("hello is %d bytes, want %d", len(b), HelloSize)
	}
	if string(b[:4]) != wireMagic {
		return h, errBadMagic
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != wireVersion {
		return h, fmt.Errorf("%w: peer speaks version %d, this side %d", errBadVersion, v, wireVersion)
	}
	h.Kind = b[6]
	if h.Kind != ConnRendezvous && h.Kind != ConnMesh {
		return h, fmt.Errorf("unknown connection kind %d", h.Kind)
	}
	h.Role = b[7]
	if h.Role != RoleDialer && h.Role != RoleAcceptor {
		return h, fmt.Errorf("unknown handshake role %d", h.Role)
	}
	h.Rank = binary.LittleEndian.Uint32(b[8:])
	h.Size = binary.LittleEndian.Uint32(b[12:])
	if h.Size == 0 || h.Size > MaxWorld {
		return h, fmt.Errorf("hello claims a job of %d ranks", h.Size)
	}
	if h.Rank == LauncherID {
		// Only a launcher serving the rendezvous: it never dials, and holds no data link.
		if h.Kind != ConnRendezvous || h.Role != RoleAcceptor {
			return h, fmt.Errorf("hello claims to be the launcher on a kind %d connection in role %d", h.Kind, h.Role)
		}
	} else if h.Rank >= h.Size {
		return h, fmt.Errorf("hello claims rank %d of %d", h.Rank, h.Size)
	}
	h.Job = binary.LittleEndian.Uint64(b[16:])
	copy(h.Nonce[:], b[24:])
	return h, nil
}

// Domain-separation labels of the two proofs of a handshake.
const (
	proofLabelDialer   = "gorun handshake v2: proof by the dialer\x00"
	proofLabelAcceptor = "gorun handshake v2: proof by the acceptor\x00"
)

// Proof is the HMAC under the job secret of the prover's label and both hellos of the
// connection, the dialer's first. The hellos carry both roles, both claimed identities, the
// job and both nonces, so a proof is valid for this connection only (the nonces are fresh),
// for these two identities only, and only from the side whose label it has (so the acceptor's
// proof can never serve as a dialer's, nor the other way round).
func Proof(secret []byte, prover uint8, dialerHello, acceptorHello []byte) []byte {
	m := hmac.New(sha256.New, secret)
	if prover == RoleDialer {
		m.Write([]byte(proofLabelDialer))
	} else {
		m.Write([]byte(proofLabelAcceptor))
	}
	m.Write(dialerHello)
	m.Write(acceptorHello)
	return m.Sum(nil)
}
