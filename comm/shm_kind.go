package comm

import (
	"errors"
	"fmt"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// shmCheck: shared memory carries every peer only where all ranks share this rank's host.
func shmCheck(me int, table []boot.RankInfo) error {
	for r, info := range table {
		if info.HostID != table[me].HostID {
			return fmt.Errorf("comm: rank %d: %s=%s, but rank %d runs on another host (%s)", me, jobenv.Transport, jobenv.TransportShm, r, info.Host)
		}
	}
	return nil
}

// shmSetup is the shared-memory transport's set-up for the route table: it reaches the peers
// on this rank's host.
func shmSetup(b *core.Setup) (core.Transport, func(int) bool, error) {
	sh, err := setupShm(b)
	if errors.Is(err, errNoShm) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return sh, func(r int) bool { return sh.peers[r] != nil }, nil
}
