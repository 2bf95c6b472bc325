package comm

import (
	"errors"
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// PeerError reports an operation that failed because a peer rank died, closed its connection,
// went silent for longer than the peer timeout, or finalized while a message from it was still
// awaited. Rank is the peer's rank in the world communicator; Err is the cause.
type PeerError = core.PeerError

// TruncateError is MPI_ERR_TRUNCATE: a message longer than the receive buffer. The buffer holds
// the first Have bytes of the message (Size is the message's); the rest was discarded. Source
// and Tag are the message's.
type TruncateError = core.TruncateError

// AbortError is returned by Run when a rank called Abort.
type AbortError struct {
	Rank, Code int
}

func (e *AbortError) Error() string { return fmt.Sprintf("rank %d called Abort(%d)", e.Rank, e.Code) }

// ErrFinalized is the cause inside a PeerError when the peer finalized normally.
var ErrFinalized = errors.New("peer has finalized and will send nothing more")

// ErrClosed is returned by operations on a communicator whose world was finalized.
var ErrClosed = errors.New("comm: communicator is finalized")

func rankError(kind string, r, size int) error {
	return fmt.Errorf("comm: %s rank %d out of range [0,%d)", kind, r, size)
}

// logf reports events a rank cannot return as an error (a refused stranger, a peer's protocol
// violation). A variable so that tests can capture it.
var logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
