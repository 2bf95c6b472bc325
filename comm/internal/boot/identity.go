package boot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// Identity is what a process learns from its environment about its place in the job
// (DESIGN.md's bootstrap contract, step 1 and 2).
type Identity struct {
	Source          string // which launcher's variables were used
	Rank, Size      int
	LocalRank       int
	Coord           string // host:port of the rendezvous listener
	CoordByLauncher bool   // the launcher serves the rendezvous: rank 0 dials Coord too
	Secret          []byte
	JobID           string
	PeerTimeout     time.Duration
	Transport       string // GORUN_TRANSPORT as given
	// Oversubscribed: the launcher said this host has more of the job's ranks than cores
	// (GORUN_OVERSUBSCRIBED=1).
	Oversubscribed bool
	// Launcher: this is a launcher serving the rendezvous (ServeRendezvous), not a rank.
	Launcher bool
	// Warning is printed when the rank starts (a multi-host job without a secret that
	// GORUN_INSECURE=1 let start).
	Warning string
}

// JobHash is the job id's hash that hellos carry.
func (id Identity) JobHash() uint64 { return Fnv64([]byte(id.JobID)) }

// Name is who this is in logs and errors: "rank 3", or "gorun launcher".
func (id Identity) Name() string {
	if id.Launcher {
		return "gorun launcher"
	}
	return "rank " + strconv.Itoa(id.Rank)
}

// ClaimedID is the identity this side claims in its hellos.
func (id Identity) ClaimedID() uint32 {
	if id.Launcher {
		return LauncherID
	}
	return uint32(id.Rank)
}

// DefaultPeerTimeout bounds how long a silent peer is trusted before its connection is declared
// lost (heartbeats keep live but busy peers from tripping it).
const DefaultPeerTimeout = 30 * time.Second

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

// FromEnv reads the first launcher's variables found (see launchers). Without any it
// describes a singleton job.
func FromEnv(getenv func(string) string) (Identity, error) {
	id := Identity{Size: 1, PeerTimeout: DefaultPeerTimeout, Transport: getenv(jobenv.Transport), Oversubscribed: getenv(jobenv.Oversubscribed) == "1"}
	if v := getenv(jobenv.PeerTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return id, fmt.Errorf("comm: %s=%q is not a positive duration", jobenv.PeerTimeout, v)
		}
		id.PeerTimeout = d
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
		id.Source = "singleton"
		return id, nil
	}
	id.Source = l.source
	sizeVar := l.size
	if sizeVar == "" { // Slurm: the step's task count, which srun -n sets
		sizeVar = "SLURM_STEP_NUM_TASKS"
		if getenv(sizeVar) == "" {
			sizeVar = "SLURM_NTASKS"
		}
	}
	var err error
	if id.Rank, err = intVar(l.rank); err != nil {
		return id, err
	}
	if id.Size, err = intVar(sizeVar); err != nil {
		return id, err
	}
	if getenv(l.local) != "" {
		if id.LocalRank, err = intVar(l.local); err != nil {
			return id, err
		}
	}
	if id.Size < 1 || id.Rank < 0 || id.Rank >= id.Size {
		return id, fmt.Errorf("comm: %s=%d and %s=%d do not describe a rank of the job", l.rank, id.Rank, sizeVar, id.Size)
	}
	id.JobID = getenv(jobenv.JobID)
	if id.Coord, err = coordFromEnv(getenv, id); err != nil {
		return id, err
	}
	id.CoordByLauncher = getenv(jobenv.CoordByLauncher) == "1" && getenv(jobenv.Coord) != ""
	if id.Size > 1 && id.Coord == "" {
		return id, fmt.Errorf("comm: %s set rank %d of %d but no rendezvous address (%s, or MASTER_ADDR and MASTER_PORT)", id.Source, id.Rank, id.Size, jobenv.Coord)
	}
	if id.Secret, id.Warning, err = jobSecret(getenv, id); err != nil {
		return id, err
	}
	if id.JobID == "" {
		id.JobID = fmt.Sprintf("%x", Fnv64(id.Secret))
	}
	return id, nil
}

// maxSecretFile bounds the size of GORUN_SECRET_FILE.
const maxSecretFile = 4 << 10

// jobSecret finds the job's secret: GORUN_SECRET, else the contents of GORUN_SECRET_FILE.
// Without either, a job whose ranks all run on one host uses a key derived from the job's
// shared facts (all that ranks started by srun, torchrun or mpirun have in common): it keeps
// other jobs and careless strangers out, not someone who can guess those facts. A multi-host
// job refuses to start then, unless GORUN_INSECURE=1, which makes it warn instead.
func jobSecret(getenv func(string) string, id Identity) (secret []byte, warning string, err error) {
	if s := getenv(jobenv.Secret); s != "" {
		return []byte(s), "", nil
	}
	if f := getenv(jobenv.SecretFile); f != "" {
		b, err := readSecretFile(f)
		return b, "", err
	}
	derived := []byte("gorun-job:" + id.Source + ":" + id.Coord + ":" + strconv.Itoa(id.Size) + ":" +
		getenv("TORCHELASTIC_RUN_ID") + getenv("OMPI_MCA_ess_base_jobid") + ":" + getenv("SLURM_JOB_ID") + "." + slurmStep(getenv))
	one, why := singleHost(getenv, id)
	if one {
		return derived, "", nil
	}
	if getenv(jobenv.Insecure) == "1" {
		return derived, fmt.Sprintf("gorun: rank %d: warning: %s=1: this job spans hosts (%s) and has no secret (%s or %s): "+
			"its key is derived from public facts of the job, so anyone who can reach %s can join the job, read the ranks' addresses and end it",
			id.Rank, jobenv.Insecure, why, jobenv.Secret, jobenv.SecretFile, id.Coord), nil
	}
	return nil, "", fmt.Errorf("comm: rank %d: this job spans hosts (%s) but has no secret: set %s to the same random string on every rank "+
		"(e.g. %s=$(openssl rand -hex 32), exported to the launcher), or %s to a file holding it that only the job's user can read "+
		"(chmod 600, on a filesystem every host sees); %s=1 runs it with a guessable key instead",
		id.Rank, why, jobenv.Secret, jobenv.Secret, jobenv.SecretFile, jobenv.Insecure)
}

// readSecretFile reads a secret from a file that group and others cannot access; one trailing
// newline is not part of it.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("comm: %s: %w", jobenv.SecretFile, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("comm: %s=%s: %w", jobenv.SecretFile, path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("comm: %s=%s is not a regular file (%v)", jobenv.SecretFile, path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("comm: %s=%s has mode %04o: group or others may access it; make it private (chmod 600 %s)", jobenv.SecretFile, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("comm: %s=%s: %w", jobenv.SecretFile, path, err)
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("comm: %s=%s is larger than %d bytes: not a secret", jobenv.SecretFile, path, maxSecretFile)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("comm: %s=%s is empty", jobenv.SecretFile, path)
	}
	return b, nil
}

// singleHost reports whether every rank of the job runs on this host, and if not, why it
// looks otherwise: the rendezvous is on a loopback address; the launcher says so (Slurm's
// node count, the launcher's local size equal to the job's size); or the rendezvous host is
// an address of this host (where no launcher said there were other hosts).
func singleHost(getenv func(string) string, id Identity) (bool, string) {
	host, _, err := net.SplitHostPort(id.Coord)
	if err != nil {
		host = id.Coord
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return true, ""
	}
	for _, v := range []string{"SLURM_STEP_NUM_NODES", "SLURM_NNODES"} {
		if n := getenv(v); n != "" {
			if n == "1" {
				return true, ""
			}
			return false, v + "=" + n
		}
	}
	for _, v := range []string{jobenv.LocalSize, "OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"} {
		if n := getenv(v); n != "" {
			if n == strconv.Itoa(id.Size) {
				return true, ""
			}
			return false, fmt.Sprintf("%s=%s of %d ranks", v, n, id.Size)
		}
	}
	if isLocalHost(host) {
		return true, ""
	}
	return false, "the rendezvous " + id.Coord + " is not on this host"
}

// isLocalHost reports whether host (a name or an address) is an address of this machine.
var isLocalHost = func(host string) bool {
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		if h, err := os.Hostname(); err == nil && h == host {
			return true
		}
		var err error
		if ips, err = net.LookupIP(host); err != nil {
			return false
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if ip.IsLoopback() {
			return true
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
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
func coordFromEnv(getenv func(string) string, id Identity) (string, error) {
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
	switch id.Source {
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
		if job := getenv("OMPI_MCA_ess_base_jobid"); job != "" && ls == strconv.Itoa(id.Size) {
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
func derivedPort(name string) int { return 10000 + int(Fnv64([]byte(name))%20000) }

// Fnv64 is the 64-bit FNV-1a hash.
func Fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
