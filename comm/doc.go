// Package comm is gorun's communicator: ranks, point-to-point messages and communicator
// management for SPMD programs, in the manner of MPI.
//
// A program gets its world communicator from Init, which reads the environment a launcher
// (gorun, mpirun, torchrun) sets, or, in tests and examples, runs its ranks as goroutines with
// Run. Messages are typed slices of any integer or float element type ([]byte included):
// Send/Recv block, Isend/Irecv return a Request; AnySource and AnyTag match anything; Probe
// reports a pending message without receiving it. Split and Dup make communicators with their
// own message spaces; SendValue and RecvValue carry arbitrary Go values for control messages.
//
// Semantics follow MPI's: messages between a pair of ranks on one communicator are matched in
// the order they were sent; a standard-mode Send of a small message returns once it is
// buffered, a large one once the receiver has taken it; a message longer than the receive
// buffer ends the receive with a *TruncateError. Failures are values: any operation that needs
// a rank that died, closed its link or stayed silent past the peer timeout (GORUN_PEER_TIMEOUT,
// 30s by default) returns a *PeerError naming the rank, instead of hanging. A silent rank on
// the same host whose process still runs (it may be starved of CPU on an oversubscribed host)
// is waited for; a stopped or vanished one is not (liveness.go).
//
// Transports: ranks in one process talk through memory (Run); separate processes through a
// full mesh of TCP connections set up at Init from a rendezvous with rank 0 (or the launcher),
// each connection authenticated both ways with the job's secret (comm/internal/boot); ranks sharing
// a host through shared memory; with GORUN_TRANSPORT=verbs, every peer through RDMA queue
// pairs (comm/internal/verbstp). As in MPI libraries, a goroutine waiting for a request drives the progress
// of the shared-memory and TCP transports itself, polling for a bounded time before it sleeps.
//
// Layers, bottom up (docs/comm.md has the details and the folder list): the bootstrap protocol
// (comm/internal/boot: identity from the environment, the authenticated handshake, the
// rendezvous) gives every rank the table of all ranks; the TCP mesh (comm/internal/tcp, built
// from that table) links every pair and is every peer's liveness channel; the data transports
// (shared memory: its protocol comm/internal/shmtp, over the device layer of segments and
// rings, comm/internal/shm; RDMA verbs: its protocol comm/internal/verbstp, over
// comm/internal/verbs and comm/internal/ibv) are set up over it for the peers each reaches,
// each given what it needs (core.Setup: the engine, liveness, the rendezvous table, set-up
// exchanges over the mesh), and a route table fixed at
// Init says which transport carries each peer's messages; liveness reports a lost peer once
// to every transport; the engine (comm/internal/core, with the requests, which this package
// re-exports as Request, Status, PeerError and TruncateError) matches messages with receives
// for all of them; Comm is the API above. Every transport is a package of its own; the
// in-process transport of Run is comm/internal/inproc. Beside it, for launchers, and linking
// no transport: comm/bootstrap
// serves the rendezvous, comm/jobenv defines the environment contract and the transports'
// names (jobenv.Transports), comm/rdmadev lists RDMA devices.
package comm
