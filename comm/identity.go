package comm

import (
	"fmt"
	"os"

	"github.com/gorun-hpc/gorun/comm/internal/boot"
)

// identity is the process's place in the job, read from its launcher's environment by the
// bootstrap protocol (comm/internal/boot).
type identity = boot.Identity

// rankInfo is one rank's entry in the rendezvous table.
type rankInfo = boot.RankInfo

// RendezvousTimeoutError reports ranks that never registered at the rendezvous (Init returns
// it on the rank that serves it).
type RendezvousTimeoutError = boot.RendezvousTimeoutError

// Init joins the job described by the environment (variables of gorun, mpirun, torchrun or a
// Slurm job step) and returns the world communicator. A process started without a launcher is rank 0 of 1.
func Init() (*Comm, error) {
	id, err := boot.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if id.Size == 1 {
		return singleton(), nil
	}
	if id.Warning != "" {
		logf("%s", id.Warning)
	}
	return initTCP(id)
}

// singleton is a world of one rank: every message is to itself.
func singleton() *Comm {
	// The only rank: no transport (a send to itself goes to its own engine).
	w := newWorld(0, 1, hostname(), []string{hostID()})
	w.abort = processAbort
	return newComm(w, worldCtx, nil)
}

// processAbort ends this process; the launcher sees the exit code and stops the other ranks.
func processAbort(rank, code int) {
	fmt.Fprintf(os.Stderr, "gorun: rank %d called Abort(%d)\n", rank, code)
	os.Exit(code)
}
