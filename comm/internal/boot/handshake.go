package boot

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The handshake that opens every connection (the rendezvous and every rank-to-rank link):
//
//	dialer   -> acceptor: hello (role dialer, claimed identity, nonce Nd)
//	acceptor -> dialer:   hello (role acceptor, claimed identity, nonce Na)
//	dialer   -> acceptor: proof(dialer label, both hellos)
//	acceptor -> dialer:   proof(acceptor label, both hellos), or 32 zero bytes: refused
//
// The acceptor checks the dialer's hello (job, size, role, claimed identity, that the nonce is
// none of this process's own) before it says anything, and verifies the dialer's proof before
// it proves anything itself: a process without the secret, whatever it relays between
// connections, never obtains a proof it could pass off. A hello carrying one of this process's
// own outstanding nonces is a reflection and refused.

// HandshakeTimeout bounds an accepting side's handshake with one unauthenticated connection.
// A variable so that tests can shorten it.
var HandshakeTimeout = 5 * time.Second

// RefusedProof is what an acceptor sends instead of its proof when the dialer's proof is
// wrong, so that a rank with the wrong secret fails at once instead of retrying. (An HMAC of
// 32 zero bytes does not occur.)
var RefusedProof = make([]byte, ProofSize)

// ownNonces holds the nonces of this process's handshakes in progress, with the identity that
// sent each. A process is one rank (or a launcher); goroutine ranks sharing a process (Run
// with GORUN_RUN_TRANSPORT, tests) are told apart by their identities.
var ownNonces sync.Map // [32]byte -> nonceOwner

type nonceOwner struct {
	job uint64
	id  uint32
}

func newHello(kind, role uint8, rank uint32, size int, jobHash uint64) (Hello, func(), error) {
	h := Hello{Kind: kind, Role: role, Rank: rank, Size: uint32(size), Job: jobHash}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return Hello{}, nil, err
	}
	ownNonces.Store(h.Nonce, nonceOwner{jobHash, rank})
	return h, func() { ownNonces.Delete(h.Nonce) }, nil
}

// checkPeerHello checks the fields every side checks of the other's hello; me is this side's
// claimed identity.
func checkPeerHello(h Hello, kind, role uint8, me uint32, size int, jobHash uint64) error {
	if h.Kind != kind {
		return fmt.Errorf("connection kind %d, want %d", h.Kind, kind)
	}
	if h.Role != role {
		return fmt.Errorf("peer hello has role %d, want %d", h.Role, role)
	}
	if int(h.Size) != size || h.Job != jobHash {
		return fmt.Errorf("peer (%s of %d) belongs to another job", h.Who(), h.Size)
	}
	if owner, ok := ownNonces.Load(h.Nonce); ok && owner == (nonceOwner{jobHash, me}) {
		return errors.New("peer hello carries this process's own nonce (a reflected hello)")
	}
	return nil
}

// ErrHandshakeRefused: the acceptor refused this side's proof: the secrets differ.
var ErrHandshakeRefused = errors.New("the peer refused this side's proof: the job secrets differ (is GORUN_SECRET or GORUN_SECRET_FILE the same on every rank?)")

// badProofError: the dialer's proof is wrong; refusing the connection tells it so
// (RefusedProof), so that a rank with another secret fails at once.
type badProofError struct{ who string }

func (e badProofError) Error() string { return e.who + " does not know the job secret" }

// ErrCutOff: the connection broke during the handshake, before the acceptor said anything
// final: it had too many unauthenticated connections, refused the claimed identity, or gave
// up waiting for this side (which may have waited long for a CPU); the dialer may try again.
type ErrCutOff struct {
	during string
	err    error
}

func (e ErrCutOff) Error() string {
	return fmt.Sprintf("connection cut off during the handshake (%s): %v", e.during, e.err)
}
func (e ErrCutOff) Unwrap() error { return e.err }

// DialHandshake is the dialing side's handshake: me is this side's claimed identity, want the
// one the acceptor must claim. It returns nil once both sides have proved the secret.
func DialHandshake(conn net.Conn, secret []byte, kind uint8, me uint32, size int, jobHash uint64, want uint32, deadline time.Time) error {
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	mine, forget, err := newHello(kind, RoleDialer, me, size, jobHash)
	if err != nil {
		return err
	}
	defer forget()
	mb := mine.Marshal()
	if _, err := conn.Write(mb); err != nil {
		return ErrCutOff{"sending the hello", err}
	}
	tb := make([]byte, HelloSize)
	if _, err := io.ReadFull(conn, tb); err != nil {
		return ErrCutOff{"waiting for the peer's hello", err}
	}
	theirs, err := ParseHello(tb)
	if err != nil {
		return err
	}
	if err := checkPeerHello(theirs, kind, RoleAcceptor, me, size, jobHash); err != nil {
		return err
	}
	if theirs.Rank != want {
		w := Hello{Rank: want}
		return fmt.Errorf("reached %s instead of %s", theirs.Who(), w.Who())
	}
	if _, err := conn.Write(Proof(secret, RoleDialer, mb, tb)); err != nil {
		return ErrCutOff{"sending the proof", err}
	}
	pb := make([]byte, ProofSize)
	if _, err := io.ReadFull(conn, pb); err != nil {
		return ErrCutOff{"waiting for the peer's proof", err}
	}
	if bytes.Equal(pb, RefusedProof) {
		return ErrHandshakeRefused
	}
	if !hmac.Equal(pb, Proof(secret, RoleAcceptor, mb, tb)) {
		return errors.New("peer does not know the job secret")
	}
	return nil
}

// AcceptHandshake is the accepting side's handshake: me is this side's claimed identity;
// claim checks the dialer's claimed identity before anything is said. It returns the dialer's
// hello once the dialer has proved the secret (and this side has proved it back).
func AcceptHandshake(conn net.Conn, secret []byte, kind uint8, me uint32, size int, jobHash uint64, claim func(Hello) error, deadline time.Time) (Hello, error) {
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	tb := make([]byte, HelloSize)
	if _, err := io.ReadFull(conn, tb); err != nil {
		return Hello{}, readError("hello", err)
	}
	theirs, err := ParseHello(tb)
	if err != nil {
		return Hello{}, err
	}
	if err := checkPeerHello(theirs, kind, RoleDialer, me, size, jobHash); err != nil {
		return Hello{}, err
	}
	if claim != nil {
		if err := claim(theirs); err != nil {
			return Hello{}, err
		}
	}
	mine, forget, err := newHello(kind, RoleAcceptor, me, size, jobHash)
	if err != nil {
		return Hello{}, err
	}
	defer forget()
	mb := mine.Marshal()
	if _, err := conn.Write(mb); err != nil {
		return Hello{}, err
	}
	pb := make([]byte, ProofSize)
	if _, err := io.ReadFull(conn, pb); err != nil {
		return Hello{}, readError("proof", err)
	}
	if !hmac.Equal(pb, Proof(secret, RoleDialer, tb, mb)) {
		// The caller refuses conn (gate.refuse), which tells the dialer.
		return Hello{}, badProofError{theirs.Who()}
	}
	if _, err := conn.Write(Proof(secret, RoleAcceptor, tb, mb)); err != nil {
		return Hello{}, err
	}
	return theirs, nil
}

// readError describes a failed read of a handshake message without the connection's
// addresses (the log names the source once), so that refusals of many connections read alike.
func readError(what string, err error) error {
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no %s within the handshake timeout: %w", what, os.ErrDeadlineExceeded)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("connection closed before its %s: %w", what, err)
	case errors.As(err, &op):
		return fmt.Errorf("reading %s: %w", what, op.Err)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// DialAuth dials addr and runs the dialing handshake until it succeeds or the deadline
// passes. Connections cut off during the handshake (the acceptor had too many unauthenticated
// ones, as when strangers flood it, or gave up on a slow dialer) are tried again; a refused
// proof or a wrong peer is final.
func DialAuth(addr string, deadline time.Time, hs func(net.Conn) error) (net.Conn, error) {
	backoff := 10 * time.Millisecond
	for {
		conn, err := DialRetry(addr, deadline)
		if err != nil {
			return nil, err
		}
		err = hs(conn)
		if err == nil {
			return conn, nil
		}
		conn.Close()
		var cut ErrCutOff
		if !errors.As(err, &cut) {
			return nil, err
		}
		if time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("gave up at the bootstrap deadline: %w", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

const (
	// MaxUnauthenticated bounds the connections a listener handshakes with at once; more are
	// closed at once.
	MaxUnauthenticated = 64
	// refusalInterval: refused connections are logged at most once per source address per
	// interval, with a count.
	refusalInterval = 10 * time.Second
	// maxRefusalSources bounds the source addresses tracked; the rest are counted together.
	maxRefusalSources = 256
)

// Gate admits a listener's unauthenticated connections (at most MaxUnauthenticated at a
// time) and logs refused ones, once per source address per refusalInterval, under the name of
// who refused ("gorun launcher", "rank 3").
type Gate struct {
	who   string
	slots chan struct{}

	mu   sync.Mutex
	srcs map[string]*refusals
}

type refusals struct {
	n     int      // refused since the last line
	whys  []string // their distinct reasons, the first few
	more  bool     // there were other reasons
	timer *time.Timer
}

// maxRefusalReasons bounds the distinct reasons a count line names.
const maxRefusalReasons = 3

func (r *refusals) add(why error) {
	r.n++
	w := why.Error()
	if slices.Contains(r.whys, w) {
		return
	}
	if len(r.whys) == maxRefusalReasons {
		r.more = true
		return
	}
	r.whys = append(r.whys, w)
}

// reasons lists the distinct reasons, and resets the count.
func (r *refusals) reasons() string {
	s := strings.Join(r.whys, "; ")
	if r.more {
		s += "; and others"
	}
	r.n, r.whys, r.more = 0, nil, false
	return s
}

// MaxWorldAtOnce bounds the extra room a listener keeps for the job's ranks that may dial it.
const MaxWorldAtOnce = 4096

// NewGate makes a gate with room for MaxUnauthenticated connections, and extra more: the
// ranks that may dial the listener at once (all of them at a rendezvous; those above a rank
// at its data listener), so that a large job's own ranks are never turned away.
func NewGate(who string, extra int) *Gate {
	return &Gate{who: who, slots: make(chan struct{}, MaxUnauthenticated+extra), srcs: map[string]*refusals{}}
}

// Admit takes a handshake slot for conn; with none free it refuses conn.
func (g *Gate) Admit(conn net.Conn) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		g.Refuse(conn, fmt.Errorf("%d unauthenticated connections already", cap(g.slots)))
		return false
	}
}

// Release frees the slot of an admitted connection once its handshake is over.
func (g *Gate) Release() { <-g.slots }

// Refuse closes conn and logs why: the first refusal from an address at once, the next ones
// as a count at the end of the interval.
func (g *Gate) Refuse(conn net.Conn, why error) {
	src := "an unknown address"
	if a := conn.RemoteAddr(); a != nil {
		src = a.String()
		if h, _, err := net.SplitHostPort(src); err == nil {
			src = h
		}
	}
	// Logged before the peer learns of the refusal, so that what it sees follows the log.
	defer func() {
		if errors.As(why, new(badProofError)) {
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			conn.Write(RefusedProof)
		}
		conn.Close()
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.srcs[src]
	if r == nil && len(g.srcs) >= maxRefusalSources {
		src = "other addresses"
		r = g.srcs[src]
	}
	if r != nil {
		r.add(why)
		return
	}
	Logf("gorun: %s: refused connection from %s: %v", g.who, src, why)
	r = &refusals{}
	g.srcs[src] = r
	r.timer = time.AfterFunc(refusalInterval, func() { g.flush(src, r) })
}

// flush logs the count of an address's refusals in the interval that ended; an address that
// had none is forgotten (its next refusal is logged at once).
func (g *Gate) flush(src string, r *refusals) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.srcs[src] != r {
		return
	}
	if r.n == 0 {
		delete(g.srcs, src)
		return
	}
	n := r.n
	Logf("gorun: %s: refused %d connections from %s in the last %v: %s", g.who, n, src, refusalInterval, r.reasons())
	r.timer.Reset(refusalInterval)
}

// Close logs the counts not yet logged, when the listener's work is done (refusals after it
// are still counted, and logged at the end of their interval).
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for src, r := range g.srcs {
		if r.n > 0 {
			n := r.n
			Logf("gorun: %s: refused %d more connections from %s: %s", g.who, n, src, r.reasons())
		}
	}
}
