// Package verbstp is the RDMA verbs transport's protocol: one connected queue pair per peer
// (RC, or UC where the devices offer no RC), eager SENDs into pre-posted buffers with credits
// returned by RDMA WRITE, large messages by request-to-send (zero-copy RDMA WRITE into the
// receiver's registered buffer on RC, sequenced staging on UC), loss and silence detection
// that ends a link with an error naming the peer, and the progress of its completion queues
// (core.Progressor). It is set up from core.Setup alone (Setup): the engine it hands arrivals
// to, the world's liveness it reports lost peers to and asks whether a silent peer still
// answers over TCP, and the mesh it exchanges queue pair attributes over; comm registers it
// in its list of data transports. The devices come from comm/internal/ibv (libibverbs with
// -tags verbs and cgo, else only the software device of the tests) and comm/internal/verbs
// (device names, registration cache).
package verbstp
