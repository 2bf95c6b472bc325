// Package tcp is comm's TCP transport: the mesh, one authenticated link per pair of ranks,
// always built, which is every peer's liveness channel (heartbeats, a link that ends) and
// the data plane of the peers no other transport reaches.
//
// Connect builds the mesh from the rendezvous table and the rank's identity (mesh.go: each
// rank dials the ranks below it and accepts those above it, each link opened by the
// handshake of comm/internal/boot) and returns the Transport: a core.Transport, a
// core.Progressor (waiters read the sockets themselves, progress.go), with what the route
// table and liveness ask of the mesh (CarryData, Beside, Answers). The protocol
// (transport.go) carries comm/internal/wire's frames: eager messages up to eagerLimit,
// larger ones by request to send, clear to send and data frames of at most dataChunk bytes
// (frames.go). Beneath it, the socket layer: a link's socket taken out of Go's netpoller
// (Detach), raw non-blocking reads and vectored writes on it (Read, Writev), and the waiter
// the background goroutine sleeps on its links with (LinkWaiter).
package tcp
