package comm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// identity is what a process learns from its environment about its place in the job
// (DESIGN.md's bootstrap contract, step 1 and 2).
type identity struct {
	source      string // which launcher's variables were used
	rank, size  int
	localRank   int
	coord       string // host:port of the rendezvous listener
	coordByLnch bool   // the launcher serves the rendezvous: rank 0 dials coord too
	secret      []byte
	jobID       string
	peerTimeout time.Duration
	transport   string
}

// defaultPeerTimeout bounds how long a silent peer is trusted before its connection is declared
// lost (heartbeats keep live but busy peers from tripping it).
const defaultPeerTimeout = 30 * time.Second

// launcherVars names the variables one launcher gives each process.
type launcherVars struct {
	source, rank, size, local string
	active                    func(getenv func(string) string) bool
}

// launchers is the order in which identities are looked for: the innermost launcher first.
// gorun's own variables; then mpirun's and torchrun's, which may run inside a Slurm
// allocation whose SLURM_* variables they inherit; then a Slurm job step (srun), recognised by
// SLURM_STEP_ID because a batch script also has SLURM_PROCID but is no step of N tasks.
var launchers = []launcherVars{
	{"gorun", jobenv.Rank, jobenv.Size, jobenv.LocalRank, func(g func(string) string) bool { return g(jobenv.Rank) != "" }},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", func(g func(string) string) bool { return g("OMPI_COMM_WORLD_RANK") != "" }},
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", func(g func(string) string) bool { return g("RANK") != "" && g("WORLD_SIZE") != "" }},
	{"Slurm", "SLURM_PROCID", "", "SLURM_LOCALID", func(g func(string) string) bool {
		return g("SLURM_PROCID") != "" && (g("SLURM_STEP_ID") != "" || g("SLURM_STEPID") != "")
	}},
}

// identityFromEnv reads the first launcher's variables found (see launchers). Without any it
// describes a singleton job.
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
	var l *launcherVars
	for i := range launchers {
		if launchers[i].active(getenv) {
			l = &launchers[i]
			break
		}
	}
	if l == nil {
		id.source = "singleton"
		return id, nil
	}
	id.source = l.source
	sizeVar := l.size
	if sizeVar == "" { // Slurm: the step's task count, which srun -n sets
		sizeVar = "SLURM_STEP_NUM_TASKS"
		if getenv(sizeVar) == "" {
			sizeVar = "SLURM_NTASKS"
		}
	}
	var err error
	if id.rank, err = intVar(l.rank); err != nil {
		return id, err
	}
	if id.size, err = intVar(sizeVar); err != nil {
		return id, err
	}
	if getenv(l.local) != "" {
		if id.localRank, err = intVar(l.local); err != nil {
			return id, err
		}
	}
	if id.size < 1 || id.rank < 0 || id.rank >= id.size {
		return id, fmt.Errorf("comm: %s=%d and %s=%d do not describe a rank of the job", l.rank, id.rank, sizeVar, id.size)
	}
	id.jobID = getenv(jobenv.JobID)
	if id.coord, err = coordFromEnv(getenv, id); err != nil {
		return id, err
	}
	id.coordByLnch = getenv(jobenv.CoordByLauncher) == "1" && getenv(jobenv.Coord) != ""
	if id.size > 1 && id.coord == "" {
		return id, fmt.Errorf("comm: %s set rank %d of %d but no rendezvous address (%s, or MASTER_ADDR and MASTER_PORT)", id.source, id.rank, id.size, jobenv.Coord)
	}
	if s := getenv(jobenv.Secret); s != "" {
		id.secret = []byte(s)
	} else {
		// Without a launcher-provided secret (srun, torchrun, mpirun), the job's shared facts
		// are all ranks have in common: it keeps strangers and other jobs out, not an attacker
		// who can read this job's environment.
		id.secret = []byte("gorun-job:" + id.source + ":" + id.coord + ":" + strconv.Itoa(id.size) + ":" +
			getenv("TORCHELASTIC_RUN_ID") + getenv("OMPI_MCA_ess_base_jobid") + ":" + getenv("SLURM_JOB_ID") + "." + slurmStep(getenv))
	}
	if id.jobID == "" {
		id.jobID = fmt.Sprintf("%x", fnv64(id.secret))
	}
	return id, nil
}

func slurmStep(getenv func(string) string) string {
	if s := getenv("SLURM_STEP_ID"); s != "" {
		return s
	}
	return getenv("SLURM_STEPID")
}

// coordFromEnv finds the rendezvous address (bootstrap contract, step 2): GORUN_COORD, else
// MASTER_ADDR:MASTER_PORT, else for a Slurm step the first host of its node list (where srun
// puts rank 0) with the step's first reserved port or one derived from the job and step ids,
// else for an mpirun job whose ranks all share this host a loopback port derived from its job
// id. "" when none applies.
func coordFromEnv(getenv func(string) string, id identity) (string, error) {
	if c := getenv(jobenv.Coord); c != "" {
		return c, nil
	}
	if a := getenv("MASTER_ADDR"); a != "" {
		p := getenv("MASTER_PORT")
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", fmt.Errorf("comm: MASTER_ADDR=%s with MASTER_PORT=%q, which is not a port number", a, p)
		}
		return net.JoinHostPort(a, p), nil
	}
	switch id.source {
	case "Slurm":
		list := getenv("SLURM_STEP_NODELIST")
		if list == "" {
			list = getenv("SLURM_JOB_NODELIST")
		}
		hosts, err := jobenv.ExpandHostlist(list)
		if err != nil {
			return "", fmt.Errorf("comm: SLURM_STEP_NODELIST: %w", err)
		}
		if len(hosts) == 0 {
			return "", errors.New("comm: Slurm step without SLURM_STEP_NODELIST: cannot find rank 0's host")
		}
		port, err := slurmPort(getenv)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(hosts[0], strconv.Itoa(port)), nil
	case "Open MPI":
		ls := getenv("OMPI_COMM_WORLD_LOCAL_SIZE")
		if job := getenv("OMPI_MCA_ess_base_jobid"); job != "" && ls == strconv.Itoa(id.size) {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(derivedPort("ompi:"+job))), nil
		}
	}
	return "", nil
}

// slurmPort is the step's first reserved port (SLURM_STEP_RESV_PORTS, e.g. "12021-12025", set
// when slurm.conf has MpiParams=ports= or srun --resv-ports=N), else a port derived from the
// job and step ids, the same on every node of the step.
func slurmPort(getenv func(string) string) (int, error) {
	if r := getenv("SLURM_STEP_RESV_PORTS"); r != "" {
		first := strings.FieldsFunc(r, func(c rune) bool { return c == '-' || c == ',' })
		if len(first) > 0 {
			if p, err := strconv.ParseUint(first[0], 10, 16); err == nil && p > 0 {
				return int(p), nil
			}
		}
		return 0, fmt.Errorf("comm: SLURM_STEP_RESV_PORTS=%q is not a port range", r)
	}
	job := getenv("SLURM_JOB_ID")
	if job == "" {
		job = getenv("SLURM_JOBID")
	}
	if job == "" {
		return 0, errors.New("comm: Slurm step without SLURM_JOB_ID or SLURM_STEP_RESV_PORTS: cannot pick the rendezvous port")
	}
	return derivedPort("slurm:" + job + "." + slurmStep(getenv)), nil
}

// derivedPort maps a job's name onto ports 10000-29999: below Linux's ephemeral range, so an
// outgoing connection of this host is unlikely to hold it.
func derivedPort(name string) int { return 10000 + int(fnv64([]byte(name))%20000) }

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Init joins the job described by the environment (variables of gorun, mpirun, torchrun or a
// Slurm job step) and returns the world communicator. A process started without a launcher is rank 0 of 1.
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
