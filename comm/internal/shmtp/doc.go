// Package shmtp is the shared-memory transport's protocol: eager records through the rings and
// fastboxes of comm/internal/shm, large messages by request-to-send (read straight from the
// sender's memory where the kernel allows, a split copy when the sender waits, else streamed
// through the ring), the blocking fast path without a Request (core.DirectLink), and the
// progress of its rings (core.ProgressSource). It is set up from core.Setup alone (Setup,
// Check): the engine it hands arrivals to, the world's liveness it reports lost peers to, and
// the mesh it exchanges segment names over; comm registers it in its list of data transports.
package shmtp
