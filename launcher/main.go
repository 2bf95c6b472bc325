package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/gorun-hpc/gorun/comm/jobenv"
	"github.com/gorun-hpc/gorun/comm/rdmadev"
)

// UsageError is a bad command line; gorun exits ExitUsage on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Command is gorun's parsed command line.
type Command struct {
	NP          int
	Program     string
	Args        []string
	TagOutput   bool
	Export      []string // NAME=value, values of bare -x NAME taken from gorun's environment
	Timeout     time.Duration
	PeerTimeout time.Duration
	Transport   string
	RDMADevice  string // exported to the ranks as GORUN_RDMA_DEVICE
	ListDevices bool
	KillGrace   time.Duration
	StdinRank   int // -1: no rank reads gorun's stdin
	Help        bool

	// Where the ranks run: Hosts (from --hostfile, -H, or a hostfile named by
	// OMPI_MCA_orte_default_hostfile or HYDRA_HOST_FILE), else a Slurm job step when gorun
	// runs inside an allocation (Srun), else this host.
	Hostfile      string
	HostList      string
	Hosts         []Host
	MapBy         string // "slot" (default) or "node"
	Oversubscribe bool
	SSH           string // ssh command (default "ssh", or OMPI_MCA_plm_rsh_agent)
	SSHArgs       string // extra ssh arguments (or OMPI_MCA_plm_rsh_args)
	Iface         string
	NoSrun        bool
	Srun          bool
}

// Transports lists the values --transport accepts: comm's transport names (jobenv).
var Transports = jobenv.Transports

const usageHead = `gorun starts an SPMD program as N ranks, as mpirun does: on this host, on the
hosts of a hostfile (over ssh), or as a Slurm job step inside an allocation.

Usage: gorun -n N [flags] PROGRAM [ARGS...]
       gorun --hostfile FILE [-n N] [flags] PROGRAM [ARGS...]
       gorun -H host1:2,host2:2 [flags] PROGRAM [ARGS...]

PROGRAM is, in order of precedence:
  a path (it contains a '/'): an executable, or a directory holding a Go main
      package (e.g. ./examples/ring), which is built first;
  a name on PATH;
  a program installed beside gorun;
  cmd/NAME of the Go module around the working directory, or of the gorun module
      (so "go run ./cmd/gorun -n 4 hpl" works on a fresh clone), built first.
Built programs are cached in $GORUN_CACHE_DIR (default: the user cache, ~/.cache/gorun).

Each rank gets GORUN_RANK, GORUN_SIZE, GORUN_LOCAL_RANK, GORUN_LOCAL_SIZE, GORUN_COORD,
GORUN_JOB_ID and GORUN_SECRET (and GORUN_PEER_TIMEOUT with --peer-timeout, GORUN_TRANSPORT
with --transport), on top of gorun's own environment and the -x exports.

Hosts: a hostfile has Open MPI's lines "host slots=N [max_slots=M]" or MPICH's "host:N"
('#' comments). Without --hostfile or -H, OMPI_MCA_orte_default_hostfile or HYDRA_HOST_FILE
names one (as the Kubeflow MPI Operator sets them). -n defaults to the total slots. Ranks
fill each host's slots in turn (--map-by slot) or go round-robin (--map-by node). A host
that is not this machine gets its ranks over ssh (BatchMode; --ssh-args or
OMPI_MCA_plm_rsh_args add options), with the -x exports and gorun's GORUN_* variables; the
program must exist at the same path there, and remote ranks read no stdin. Inside a Slurm
allocation (SLURM_JOB_ID set, not in a job step) gorun hands the job to srun unless
--no-srun or hosts are given.

Output is forwarded line by line (lines of different ranks never mix). SIGINT, SIGTERM
and SIGHUP send SIGTERM to every rank (SIGKILL after --kill-grace, or at once on a second
signal); SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to every rank. When a rank fails the
others are terminated and gorun exits with the highest code of the ranks that failed
(128+signal if a signal killed one; 255 if ssh to a host failed or lost its connection);
124 when --timeout expires; 2 on a usage error.

Flags:
`

// ParseArgs parses gorun's command line (without the program name). environ supplies the values
// of bare -x NAME flags. Warnings (a bare -x of an unset variable) go to warn.
func ParseArgs(args []string, environ func(string) (string, bool), warn io.Writer) (*Command, error) {
	c := &Command{}
	var exports []string
	var stdinSpec string
	fs := newFlagSet(c, &exports, &stdinSpec)
	if err := fs.Parse(mpirunCompat(fs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			c.Help = true
			return c, nil
		}
		return nil, &UsageError{Msg: err.Error()}
	}
	if c.Help || c.ListDevices {
		return c, nil
	}
	if err := c.placeRanks(fs.Changed("np"), environ); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, usageErrorf("no PROGRAM given")
	}
	c.Program, c.Args = rest[0], rest[1:]
	for name, d := range map[string]time.Duration{"--timeout": c.Timeout, "--peer-timeout": c.PeerTimeout, "--kill-grace": c.KillGrace} {
		if d < 0 {
			return nil, usageErrorf("%s must not be negative, got %v", name, d)
		}
	}
	if c.Transport != "" && !slices.Contains(Transports, c.Transport) {
		n := len(Transports)
		return nil, usageErrorf("--transport %q: want %s or %s", c.Transport, strings.Join(Transports[:n-1], ", "), Transports[n-1])
	}
	if c.RDMADevice != "" {
		c.Export = append(c.Export, jobenv.RDMADevice+"="+c.RDMADevice)
	}
	switch stdinSpec {
	case "none":
		c.StdinRank = -1
	default:
		r, err := strconv.Atoi(stdinSpec)
		if err != nil || r < 0 {
			return nil, usageErrorf("--stdin wants a rank number or \"none\", got %q", stdinSpec)
		}
		if r >= c.NP {
			return nil, usageErrorf("--stdin %d: no such rank in a job of %d", r, c.NP)
		}
		c.StdinRank = r
	}
	for _, x := range exports {
		name, value, hasValue := strings.Cut(x, "=")
		if !validEnvName(name) {
			return nil, usageErrorf("-x %q: not a valid variable name", x)
		}
		if !hasValue {
			v, ok := environ(name)
			if !ok {
				fmt.Fprintf(warn, "gorun: warning: -x %s: not set in gorun's environment, not exported\n", name)
				continue
			}
			value = v
		}
		c.Export = append(c.Export, name+"="+value)
	}
	return c, nil
}

// placeRanks decides where the ranks run (see Command) and how many there are.
func (c *Command) placeRanks(npGiven bool, environ func(string) (string, bool)) error {
	switch c.MapBy {
	case "", "slot", "core":
	case "node":
	default:
		return usageErrorf("--map-by %q: want slot or node", c.MapBy)
	}
	if c.Hostfile != "" && c.HostList != "" {
		return usageErrorf("--hostfile and -H exclude each other")
	}
	var err error
	switch {
	case c.HostList != "":
		if c.Hosts, err = ParseHostList(c.HostList); err != nil {
			return usageErrorf("%v", err)
		}
	case c.Hostfile != "":
		if c.Hosts, err = readHostfile(c.Hostfile); err != nil {
			return usageErrorf("%v", err)
		}
	default:
		for _, v := range []string{"OMPI_MCA_orte_default_hostfile", "HYDRA_HOST_FILE"} {
			if f, ok := environ(v); ok && f != "" {
				if c.Hosts, err = readHostfile(f); err != nil {
					return usageErrorf("%s: %v", v, err)
				}
				c.Hostfile = f
				break
			}
		}
	}
	if c.Hosts == nil && !c.NoSrun {
		_, inJob := environ("SLURM_JOB_ID")
		_, inStep := environ("SLURM_STEP_ID")
		c.Srun = inJob && !inStep
	}
	if !npGiven {
		switch {
		case c.Hosts != nil:
			c.NP = TotalSlots(c.Hosts)
		case c.Srun:
			v, _ := environ("SLURM_NTASKS")
			if c.NP, err = strconv.Atoi(v); err != nil {
				return usageErrorf("the number of ranks is required: -n N (SLURM_NTASKS=%q)", v)
			}
		default:
			return usageErrorf("the number of ranks is required: -n N")
		}
	}
	if c.NP <= 0 {
		return usageErrorf("-n must be a positive number of ranks, got %d", c.NP)
	}
	if c.Hosts != nil {
		if _, err := Map(c.Hosts, c.NP, c.MapBy == "node", c.Oversubscribe); err != nil {
			return usageErrorf("%v", err)
		}
		if c.SSH == "" {
			// Open MPI's agent list ("ssh : rsh") names alternatives: take the first.
			agent, _ := environ("OMPI_MCA_plm_rsh_agent")
			c.SSH, _, _ = strings.Cut(agent, ":")
			c.SSH = strings.TrimSpace(c.SSH)
		}
		if c.SSHArgs == "" {
			c.SSHArgs, _ = environ("OMPI_MCA_plm_rsh_args")
		}
		if _, err := c.sshCommand(); err != nil {
			return err
		}
	}
	return nil
}

// sshCommand is the ssh agent and its arguments as words.
func (c *Command) sshCommand() ([]string, error) {
	agent := c.SSH
	if agent == "" {
		agent = "ssh"
	}
	words, err := SplitShellWords(agent + " " + c.SSHArgs)
	if err != nil {
		return nil, usageErrorf("ssh command: %v", err)
	}
	return words, nil
}

func readHostfile(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hostfile: %w", err)
	}
	defer f.Close()
	return ParseHostfile(f, path)
}

func newFlagSet(c *Command, exports *[]string, stdinSpec *string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gorun", pflag.ContinueOnError)
	fs.SetInterspersed(false) // everything after PROGRAM belongs to PROGRAM
	fs.SetOutput(io.Discard)  // errors are returned and printed once by Main
	fs.SortFlags = false
	fs.IntVarP(&c.NP, "np", "n", 0, "number of ranks to start (also -np)")
	fs.BoolVar(&c.TagOutput, "tag-output", false, "prefix every output line with \"[rank] \"")
	fs.StringArrayVarP(exports, "export", "x", nil, "export `VAR[=value]` to every rank (repeatable); a bare VAR passes gorun's value")
	fs.StringVar(stdinSpec, "stdin", "0", "which rank reads gorun's stdin: a rank number, or \"none\"")
	fs.DurationVar(&c.Timeout, "timeout", 0, "terminate the job after this long (exit code 124); 0 = no limit")
	fs.DurationVar(&c.PeerTimeout, "peer-timeout", 0, "how long a rank waits on a silent peer before it reports it lost (sets GORUN_PEER_TIMEOUT)")
	fs.StringVar(&c.Transport, "transport", "", "data plane between ranks: tcp, shm (shared memory, ranks on one host), verbs (RDMA: InfiniBand, RoCE, Thunderbolt) or auto (shm where ranks share a host); sets GORUN_TRANSPORT")
	fs.StringVar(&c.RDMADevice, "rdma-device", "", "RDMA device of --transport verbs, as --list-devices names it (default: the first with an active port); sets GORUN_RDMA_DEVICE")
	fs.BoolVar(&c.ListDevices, "list-devices", false, "list the RDMA devices (ports, states, GIDs) the verbs transport can use, and exit")
	fs.DurationVar(&c.KillGrace, "kill-grace", DefaultKillGrace, "time between SIGTERM and SIGKILL when the job is torn down")
	fs.StringVar(&c.Hostfile, "hostfile", "", "run on the hosts of `FILE` (\"host slots=N\" or \"host:N\" lines); also --machinefile")
	fs.StringVar(&c.Hostfile, "machinefile", "", "same as --hostfile")
	fs.StringVarP(&c.HostList, "host", "H", "", "run on these hosts: `host1:2,host2:2` (a host without :N has one slot per mention)")
	fs.StringVar(&c.MapBy, "map-by", "", "rank placement on the hosts: slot (fill each host in turn; the default) or node (round-robin)")
	fs.BoolVar(&c.Oversubscribe, "oversubscribe", false, "allow more ranks than the hosts have slots; on this host alone, run more ranks than cores without a warning")
	fs.StringVar(&c.SSH, "ssh", "", "command that reaches a remote host (default: OMPI_MCA_plm_rsh_agent, else ssh)")
	fs.StringVar(&c.SSHArgs, "ssh-args", "", "extra arguments for ssh, e.g. \"-i key -p 2222\" (default: OMPI_MCA_plm_rsh_args)")
	fs.StringVar(&c.Iface, "iface", "", "network for the ranks' data and gorun's rendezvous: interface `NAME` or CIDR (sets GORUN_IFACE)")
	fs.BoolVar(&c.NoSrun, "no-srun", false, "inside a Slurm allocation, run the ranks on this host rather than with srun")
	fs.BoolVarP(&c.Help, "help", "h", false, "show this help")
	return fs
}

// mpirunCompat rewrites mpirun's single-dash long flags (-np N, -hostfile F, -host H, -map-by
// node; pflag would read -np as -n "p") into their double-dash form, in the flags before
// PROGRAM only.
func mpirunCompat(fs *pflag.FlagSet, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "--":
			return out
		case !strings.HasPrefix(a, "-") || a == "-":
			return out // PROGRAM
		}
		if name, _, _ := strings.Cut(a[1:], "="); !strings.HasPrefix(a, "--") && len(name) > 1 && fs.Lookup(name) != nil {
			a = "-" + a
			out[i] = a
		}
		// Skip the separate value of a flag that takes one, so it is never taken for PROGRAM.
		if strings.Contains(a, "=") {
			continue
		}
		var f *pflag.Flag
		if strings.HasPrefix(a, "--") {
			f = fs.Lookup(a[2:])
		} else if len(a) == 2 {
			f = fs.ShorthandLookup(a[1:])
		}
		if f != nil && f.NoOptDefVal == "" {
			i++
		}
	}
	return out
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Usage returns gorun's help text.
func Usage() string {
	var c Command
	var x []string
	var s string
	fs := newFlagSet(&c, &x, &s)
	return usageHead + fs.FlagUsages()
}

// Main is gorun: it parses args (without the program name), resolves PROGRAM, runs the job with
// gorun's signals, stdin and outputs, and returns the process exit code.
func Main(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	cmd, err := ParseArgs(args, os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gorun: %v\nRun 'gorun --help' for usage.\n", err)
		return ExitUsage
	}
	if cmd.Help {
		io.WriteString(stdout, Usage())
		return 0
	}
	if cmd.ListDevices {
		if err := rdmadev.List(stdout); err != nil {
			fmt.Fprintf(stderr, "gorun: --list-devices: %v\n", err)
			return ExitFailure
		}
		return 0
	}
	exe, err := Resolver{Log: stderr, Pin: !cmd.Srun}.Resolve(cmd.Program)
	if err != nil {
		fmt.Fprintf(stderr, "gorun: %v\n", err)
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return ExitUsage
		}
		return ExitFailure
	}
	defer Unpin(exe)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)

	if cmd.Srun {
		return runSrun(cmd, exe, sigs, stdout, stderr)
	}
	ssh, _ := cmd.sshCommand()
	job := &Job{
		Hosts:         cmd.Hosts,
		MapByNode:     cmd.MapBy == "node",
		Oversubscribe: cmd.Oversubscribe,
		SSH:           ssh,
		Iface:         cmd.Iface,
		NP:            cmd.NP,
		Program:       exe,
		Args:          cmd.Args,
		Export:        cmd.Export,
		TagOutput:     cmd.TagOutput,
		Timeout:       cmd.Timeout,
		PeerTimeout:   cmd.PeerTimeout,
		Transport:     cmd.Transport,
		KillGrace:     cmd.KillGrace,
		StdinRank:     cmd.StdinRank,
		Stdout:        stdout,
		Stderr:        stderr,
		Signals:       sigs,
	}
	if cmd.KillGrace == 0 {
		job.KillGrace = -1 // --kill-grace 0: SIGKILL right after SIGTERM
	}
	if stdin != nil && cmd.StdinRank >= 0 && !backgroundTerminal(stdin) {
		job.Stdin = stdin
		if term.IsTerminal(int(stdin.Fd())) {
			job.IdleFlush = idleFlush
		}
	}
	code, err := job.Run(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "gorun: %v\n", err)
	}
	return code
}

// backgroundTerminal reports whether f is a terminal whose foreground process group is not
// gorun's: reading it would stop gorun with SIGTTIN (as in `gorun ... &`), so gorun leaves
// stdin alone and the rank reads /dev/null.
func backgroundTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	background := false
	_ = rc.Control(func(fd uintptr) {
		fg, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
		// An error means not a terminal (or not ours): forwarding is safe.
		background = err == nil && fg != unix.Getpgrp()
	})
	return background
}
