package tcp

import "github.com/gorun-hpc/gorun/comm/internal/wire"

// Frames are comm/internal/wire's: every connection starts with the bootstrap handshake in
// which both sides prove that they know the job's secret (comm/internal/boot); after that it
// carries frames, each a wire.Header followed by Length payload bytes. Every field is checked
// before anything is allocated.

const (
	// eagerLimit: messages up to this size travel with their header and are buffered by the
	// receiver if no receive is posted; larger ones use rendezvous (RTS, CTS, DATA), so an
	// unexpected large message costs the receiver no memory.
	eagerLimit = 64 << 10
	// dataChunk bounds one DATA frame so that small messages are not stuck behind a huge one.
	dataChunk = 4 << 20
)

// parseHeader decodes and validates a tcp frame header with the tcp transport's limits.
func parseHeader(b []byte) (wire.Header, error) { return wire.Parse(b, eagerLimit, dataChunk) }
