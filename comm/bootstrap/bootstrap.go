// Package bootstrap is what a launcher needs of a gorun job's bootstrap protocol: it serves
// the rendezvous at which the job's ranks register and receive the table of all ranks. It
// links no transport of comm (only the protocol, comm/internal/boot), so a launcher that
// imports it carries none of the shared-memory or RDMA code. Ranks join a job with comm.Init.
package bootstrap

import (
	"net"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
)

// RendezvousTimeoutError reports ranks that never registered at the rendezvous.
type RendezvousTimeoutError = boot.RendezvousTimeoutError

// ServeRendezvous hosts the rendezvous of a job for a launcher that set GORUN_COORD (the
// address of ln), GORUN_COORD_LAUNCHER=1, GORUN_JOB_ID and GORUN_SECRET for its ranks: it
// waits until all size ranks have registered, sends each the rank table, and returns. It gives
// up the bootstrap timeout the ranks use (from peerTimeout; 0 means the default) after the
// first rank registered, or when stop is closed. It does not close ln. Every connection must
// prove the job's secret first; strangers are refused and logged on stderr.
func ServeRendezvous(ln net.Listener, size int, jobID, secret string, peerTimeout time.Duration, stop <-chan struct{}) error {
	return boot.ServeRendezvous(ln, size, jobID, secret, peerTimeout, stop)
}
