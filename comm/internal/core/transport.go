package core

// A Transport moves messages between the world's ranks. Receiving goes through the rank's
// engine (Engine.Arrive); sending is the transport's own.
type Transport interface {
	// Send transmits payload to world rank dst and completes req once payload may be reused.
	Send(dst int, ctx uint64, tag int, payload []byte, req *Request)
	// PeerLost is the world's liveness reporting world rank rank gone (once per rank): the
	// transport fails what it has pending with that peer and takes no more for it.
	PeerLost(rank int, cause error)
	// Finalize closes the transport after the world's final barrier, letting what is in
	// flight arrive.
	Finalize() error
	// Abandon closes the transport at once, as the process's exit would: peers see the
	// links end with cause.
	Abandon(cause error)
}
