// Package rma is one-sided communication over a comm.Comm, as MPI-3's windows: every rank
// exposes a []T, and any rank reads and writes the others' with Put, Get and Accumulate, without
// the target calling in.
//
//	w, err := rma.Allocate[float64](c, n) // n elements per rank, w.Local() is this rank's part
//	err = w.Fence()                        // open an epoch on every rank
//	err = w.Put(right, 0, edge)            // into rank right's elements [0, len(edge))
//	err = w.Accumulate(0, 0, partial, collectives.Sum[float64]())
//	err = w.Fence()                        // every rank's operations are complete
//	...
//	err = w.Lock(t, rma.Exclusive)         // passive target: t does not take part
//	err = w.Get(t, off, buf)
//	err = w.Unlock(t)
//	err = w.Free()
//
// # Epochs
//
// An access needs an epoch, as in MPI. Fence is collective: it completes every operation issued
// since the previous fence (at origin and target) and opens the next epoch, in which any rank
// may access any rank; FenceEnd completes them and opens none (MPI_MODE_NOSUCCEED). Outside a
// fence epoch, Lock(t, Shared or Exclusive) opens a passive-target epoch on rank t alone and
// Unlock(t) completes it; an exclusive lock excludes every other lock on t, shared locks exclude
// only exclusive ones, and waiting lockers are granted in arrival order. Flush(t) completes the
// operations to t within an epoch. Get returns with the data in hand; Put and Accumulate may
// still be in flight until the next Fence, Flush or Unlock. Element-wise, Accumulates to one
// target are atomic with respect to each other and to Puts and Gets (each operation runs under
// the target's lock); the outcome of concurrent conflicting Puts is undefined, as in MPI.
// Accumulate takes the predefined ops of package collectives (Sum, Prod, Min, Max, MinLoc,
// MaxLoc, And, Or, Xor) and Replace; user ops (collectives.NewOp) are refused, as by MPI.
//
// # Transports
//
// At creation the window duplicates its communicator and starts a goroutine that serves the
// requests other ranks send it there (the target side of every message-path operation, lock
// requests included), so passive target works whatever the target is doing. Two paths carry
// the data:
//
//   - Direct: Allocate maps, for the ranks of each host (comm.Comm.HostID), one shared segment
//     it creates in jobenv.SegmentDir() (/dev/shm on Linux) and unlinks once every rank there
//     has mapped it; the window's elements live in it, and a rank reads and writes a same-host
//     rank's elements with a copy under that rank's lock word in the segment. A rank's own
//     elements are accessed directly in every window.
//   - Messages: every other pair (ranks on different hosts; any pair of a window made by Create
//     over the caller's slice; GORUN_RMA_SHM=0; a host where the segment could not be made)
//     sends requests to the target's serving goroutine over the window's communicator, with
//     comm's transport between them: shared memory, TCP, or RDMA queue pairs under
//     GORUN_TRANSPORT=verbs. RDMA READ/WRITE straight into window memory is not used: verbs
//     ranks take the message path.
//
// Locks always take the message path, to the target's serving goroutine, which keeps one lock
// state per rank whichever path the data takes.
//
// # Bad input
//
// Creation is collective and checked collectively: a negative length, one over 64 TiB, or
// element types of different sizes on any rank make it fail on every rank (windows may differ
// in length between ranks, as in MPI). An access to a rank outside the communicator, a range
// outside the target's window, an access outside an epoch, Lock inside a fence epoch or of a
// rank already locked, Unlock of a rank not locked: the call returns an error naming what was
// wrong and sends nothing, so the window stays usable. Fence and Free exchange a flag, so a
// rank that calls them while holding locks makes every rank's call fail instead of leaving the
// others waiting. A serving goroutine bounds each request by the largest its window can hold
// before it allocates, and ignores (and reports from Free) requests it cannot decode.
// Predefined ops are recognised by name, as collectives recognise ops.
//
// # Peer failure
//
// An operation that needs a rank that died or left returns comm's *comm.PeerError (Fence and
// Free need every rank). The serving goroutines of the ranks still there go on serving each
// other, polling them one by one (comm fails a wait on any source once a rank is gone), so
// their locks and accesses among themselves keep working.
package rma
