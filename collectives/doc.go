// Package collectives implements MPI's collective operations over a comm.Comm, with the
// algorithms real MPI libraries use, chosen by message size and rank count.
//
//	err := collectives.Allreduce(c, local, global, collectives.Sum[float64]())
//	err := collectives.Bcast(c, weights, 0)
//	req := collectives.Iallreduce(c, nil, grads, collectives.Sum[float32]()) // overlap compute
//	...
//	err = req.Wait() // comm.Request
//
// # Conventions
//
// Calls are typed with generics over comm.Elem, like comm's point-to-point calls: buffers are
// []T and counts are in elements. Every rank of c must call the same collectives in the same
// order (blocking and non-blocking alike, as in MPI). A send argument of nil is the in-place
// form (MPI_IN_PLACE): the input is taken from recv (Scatter: recv == nil at root); passing the
// same slice as send and recv is in-place too. Arguments read only at the root (Gather's recv,
// Scatter's send, the counts of Gatherv/Scatterv) may be nil elsewhere.
//
// Collective traffic goes over a private duplicate of c, made on c's first collective call (see
// the Message space notes in space.go), with one tag per operation from that duplicate's own
// sequence, so collectives never match user point-to-point messages and overlapping
// non-blocking collectives never match each other.
//
// # Ops and types
//
// Sum, Prod, Min, Max, MaxLoc/MinLoc (value, index pairs stored interleaved), And, Or and Xor
// (integers), and user functions (NewOp, commutative or not) over every Go integer and float
// type, complex types (Sum, Prod), and Float16 / BFloat16, which are stored in 16 bits and
// reduced in float32. Float32 and float64 sums run in AVX2 assembly on amd64 (the noasm build
// tag selects the pure-Go twins).
//
// # Bad input
//
// Element counts that differ between ranks, a root out of range or differing between ranks, an
// op not defined for the element type, differing ops or element types: every rank returns an
// error (wrapping ErrMismatch when the cause is another rank's arguments), never a hang or a
// wrong answer. Before moving data, the ranks run a recursive-doubling exchange of a 56-byte
// header carrying a fingerprint of each rank's arguments and whether it rejected them; small
// allreduces and broadcasts carry their data inside that exchange, so for them the check costs
// nothing. For the v-variants, whose counts only the root knows, sizes are checked on receipt and
// a second exchange after the data spreads the verdict. GORUN_COLL_CHECK=0 turns the check
// off (MPI's behaviour: bad input is then undefined).
//
// # Algorithms
//
//	Allreduce      recursive doubling (small; also every non-commutative op), Rabenseifner's
//	               reduce-scatter + allgather (medium, 2^k ranks), pipelined ring (large), direct
//	               (full mesh: every pair exchanges at once; for a small, fully connected set of
//	               nodes), hierarchical (several hosts: inside each host, then among leaders)
//	Bcast          recursive doubling in the check (small), binomial tree, binomial scatter +
//	               ring allgather (large), hierarchical (several hosts)
//	Reduce         binomial tree; recursive-halving reduce-scatter + gather (large, commutative)
//	Allgather      recursive doubling (2^k ranks, small), ring; Allgatherv: ring
//	ReduceScatter  ring or pairwise exchange (commutative); reduce + scatter in rank order
//	Alltoall(v)    pairwise exchange
//	Barrier        dissemination
//	Scan, Exscan   recursive doubling
//	Gather(v), Scatter(v)  direct to and from the root
//
// Host awareness: a communicator's host layout comes from comm's bootstrap (Comm.HostID, which
// GORUN_HOST_ID overrides). Where it spans several hosts with several ranks on some host, the
// first collective on it splits it into per-host and leader communicators (once, in the calling
// goroutine, also for the non-blocking forms), and medium and large allreduces and broadcasts go
// through them: shared memory inside hosts, the network only between leaders.
//
// All of them handle any rank count (non-powers of two fold the extra ranks in) and any vector
// length; every rank gets bitwise the same result from Allreduce. The thresholds live in one
// table, Tuning, overridable by GORUN_COLL_* environment variables as Open MPI's coll_tuned
// parameters are. Temporary buffers come from a pool and are reused, since the first touch of
// fresh pages costs far more than the copy itself.
package collectives
