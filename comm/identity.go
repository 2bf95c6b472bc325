package comm

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// identity is what a process learns from its environment about its place in the job
// (DESIGN.md's bootstrap contract, step 1 and 2).
type identity struct {
	source      string // which launcher's variables were used
	rank, size  int
	localRank   int
	coord       string // host:port of rank 0's rendezvous listener
	secret      []byte
	jobID       string
	peerTimeout time.Duration
	transport   string
}

// defaultPeerTimeout bounds how long a silent peer is trusted before its connection is declared
// lost (heartbeats keep live but busy peers from tripping it).
const defaultPeerTimeout = 30 * time.Second

// identityFromEnv reads the first launcher's variables found: gorun's, then Open MPI's
// (mpirun), then torchrun/Kubeflow's. Without any it describes a singleton job.
func identityFromEnv(getenv func(string) string) (identity, error) {
	id := identity{size: 1, peerTimeout: defaultPeerTimeout, transport: getenv(jobenv.Transport)}
	if v := getenv(jobenv.PeerTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return id, fmt.Errorf("comm: %s=%q is not a positive duration", jobenv.PeerTimeout, v)
		}
		id.peerTimeout = d
	}
	intVar := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("comm: %s=%q is not an integer", name, v)
		}
		return n, nil
	}
	pick := func(source, rankVar, sizeVar, localVar string) error {
		var err error
		id.source = source
		if id.rank, err = intVar(rankVar); err != nil {
			return err
		}
		if id.size, err = intVar(sizeVar); err != nil {
			return err
		}
		if getenv(localVar) != "" {
			if id.localRank, err = intVar(localVar); err != nil {
				return err
			}
		}
		if id.size < 1 || id.rank < 0 || id.rank >= id.size {
			return fmt.Errorf("comm: %s=%d and %s=%d do not describe a rank of the job", rankVar, id.rank, sizeVar, id.size)
		}
		return nil
	}
	var err error
	switch {
	case getenv(jobenv.Rank) != "":
		err = pick("gorun", jobenv.Rank, jobenv.Size, jobenv.LocalRank)
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		err = pick("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK")
	case getenv("RANK") != "" && getenv("WORLD_SIZE") != "":
		err = pick("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK")
	default:
		id.source = "singleton"
		return id, nil
	}
	if err != nil {
		return id, err
	}
	id.jobID = getenv(jobenv.JobID)
	id.coord = getenv(jobenv.Coord)
	if id.coord == "" && getenv("MASTER_ADDR") != "" {
		id.coord = net.JoinHostPort(getenv("MASTER_ADDR"), getenv("MASTER_PORT"))
	}
	if id.size > 1 && id.coord == "" {
		return id, fmt.Errorf("comm: %s set rank %d of %d but no rendezvous address (%s, or MASTER_ADDR and MASTER_PORT)", id.source, id.rank, id.size, jobenv.Coord)
	}
	if s := getenv(jobenv.Secret); s != "" {
		id.secret = []byte(s)
	} else {
		// Without a launcher-provided secret (torchrun, mpirun), the job's shared facts are
		// all ranks have in common: it keeps strangers and other jobs out, not an attacker
		// who can read this job's environment.
		id.secret = []byte("gorun-job:" + id.source + ":" + id.coord + ":" + strconv.Itoa(id.size) + ":" + getenv("TORCHELASTIC_RUN_ID") + getenv("OMPI_MCA_ess_base_jobid"))
	}
	if id.jobID == "" {
		id.jobID = fmt.Sprintf("%x", fnv64(id.secret))
	}
	return id, nil
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Init joins the job described by the environment (variables of gorun, mpirun or torchrun) and
// returns the world communicator. A process started without a launcher is rank 0 of 1.
func Init() (*Comm, error) {
	id, err := identityFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if id.size == 1 {
		return singleton(), nil
	}
	return initTCP(id)
}

// singleton is a world of one rank: every message is to itself.
func singleton() *Comm {
	w := &world{rank: 0, size: 1, eng: newEngine(0), tr: selfOnly{}, host: hostname(), hostIDs: []string{hostID()}}
	w.abort = processAbort
	return newComm(w, worldCtx, nil)
}

type selfOnly struct{}

func (selfOnly) send(dst int, ctx uint64, tag int, payload []byte, req *Request) {
	req.complete(Status{}, fmt.Errorf("comm: no transport to rank %d in a singleton world", dst))
}
func (selfOnly) finalize() error { return nil }

// processAbort ends this process; the launcher sees the exit code and stops the other ranks.
func processAbort(rank, code int) {
	fmt.Fprintf(os.Stderr, "gorun: rank %d called Abort(%d)\n", rank, code)
	os.Exit(code)
}
