package topology

import (
	"fmt"
	"hash/fnv"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// agree is the check every constructor runs before it creates communicators: each rank
// contributes whether it accepted its own arguments and a fingerprint of those that must be
// equal on every rank, and all ranks reach the same verdict. A rank whose arguments were bad
// returns its own error; the others name the first rank that disagreed.
func agree(c *comm.Comm, op string, local error, fp uint64) error {
	mine := []uint64{0, fp}
	if local != nil {
		mine[0] = 1
	}
	all := make([]uint64, 2*c.Size())
	if err := collectives.Allgather(c, mine, all); err != nil {
		if local != nil {
			return local
		}
		return fmt.Errorf("topology: %s: %w", op, err)
	}
	if local != nil {
		return local
	}
	for r := 0; r < c.Size(); r++ {
		if all[2*r] != 0 {
			return fmt.Errorf("topology: %s: rank %d rejected its arguments: %w", op, r, collectives.ErrMismatch)
		}
	}
	for r := 0; r < c.Size(); r++ {
		if all[2*r+1] != fp {
			return fmt.Errorf("topology: %s: rank %d passed arguments that differ from rank %d's: %w", op, r, c.Rank(), collectives.ErrMismatch)
		}
	}
	return nil
}

// fingerprint hashes a sequence of integers (the arguments that must agree between ranks).
func fingerprint(parts ...int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, p := range parts {
		for i := range b {
			b[i] = byte(uint64(p) >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}
