// Package core is the transport-independent heart of package comm: the engine that matches
// arriving messages with posted receives (Engine, RecvOp, InMsg), requests and their
// completion (Request, Status, and the Progressor a polling transport gives its waiters), the
// request-to-send/clear-to-send bookkeeping of large messages that the tcp and shm transports
// share (Rendezvous), and the errors a receive or a failed peer ends with (PeerError,
// TruncateError). Package comm re-exports Request, Status, PeerError and TruncateError as
// aliases; the transports reach the engine only through this package.
package core
