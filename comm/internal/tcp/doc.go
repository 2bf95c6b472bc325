// Package tcp is the socket layer of comm's TCP transport: a link's socket taken out of Go's
// netpoller (Detach), raw non-blocking reads and vectored writes on it (Read, Writev), and the
// waiter the transport's background goroutine sleeps on its links with (LinkWaiter). The
// transport's protocol (frames, matching, liveness) is comm's tcp.go and tcp_poll.go, which
// use the engine's types; docs/comm-internals.md says what remains to move it here.
package tcp
