package core

import "fmt"

const (
	// AnySource matches a message from any rank of the communicator (MPI_ANY_SOURCE).
	AnySource = -1
	// AnyTag matches any tag (MPI_ANY_TAG).
	AnyTag = -1
)

// PeerError reports an operation that failed because a peer rank died, closed its connection,
// went silent for longer than the peer timeout, or finalized while a message from it was still
// awaited. Rank is the peer's rank in the world communicator.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }
func (e *PeerError) Unwrap() error { return e.Err }

// TruncateError is MPI_ERR_TRUNCATE: a message longer than the receive buffer. The buffer holds
// the first Have bytes of the message; the rest was discarded.
type TruncateError struct {
	Source, Tag int
	Size, Have  int // message bytes, buffer bytes
}

func (e *TruncateError) Error() string {
	return fmt.Sprintf("message truncated: %d bytes from rank %d (tag %d) into a %d-byte buffer", e.Size, e.Source, e.Tag, e.Have)
}
