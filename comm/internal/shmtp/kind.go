package shmtp

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// Check says why shared memory cannot carry every peer (GORUN_TRANSPORT=shm): some rank runs
// on another host than rank me.
func Check(me int, table []boot.RankInfo) error {
	for r, info := range table {
		if info.HostID != table[me].HostID {
			return fmt.Errorf("comm: rank %d: %s=%s, but rank %d runs on another host (%s)", me, jobenv.Transport, jobenv.TransportShm, r, info.Host)
		}
	}
	return nil
}

// Setup connects this rank to the peers on its host through shared memory, exchanging what
// it needs over the mesh (every rank of the world calls it). It returns the transport and
// whether it reaches each world rank (the peers on this host), or nil where no peer shares
// the host.
func Setup(b *core.Setup) (core.Transport, func(int) bool, error) {
	sh, err := setupShm(b)
	if errors.Is(err, errNoShm) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return sh, func(r int) bool { return sh.peers[r] != nil }, nil
}
