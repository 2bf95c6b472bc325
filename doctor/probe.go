package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
	"github.com/gorun-hpc/gorun/launcher"
)

const probeOK = "gorun-doctor-probe-ok"

// probe runs a one-line command on host over ssh: it answers within timeout (ssh's connect
// timeout, and the whole command's) and has exe, or the error says which of the two failed.
func probe(ctx context.Context, ssh []string, host, exe string, timeout time.Duration) error {
	secs := max(int(timeout/time.Second), 1)
	argv := append(append([]string{}, ssh...), "-T", "-x", "-o", "BatchMode=yes", "-o", "ConnectTimeout="+strconv.Itoa(secs),
		host, "test -x "+shQuote(exe)+" && echo "+probeOK)
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, errb := &capped{max: 4 << 10}, &capped{max: 4 << 10, keepTail: true}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	if strings.Contains(out.String(), probeOK) {
		return nil
	}
	last := strings.TrimSpace(tail(errb.String(), 1))
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("unreachable: no answer over ssh within %v", timeout)
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 255:
		if last == "" {
			last = "ssh failed"
		}
		return fmt.Errorf("unreachable: %s", last)
	case err != nil && cmd.ProcessState == nil:
		return fmt.Errorf("ssh (%s): %v", argv[0], err)
	}
	return fmt.Errorf("reachable, but no gorun at %s there (install the same gorun at the same path, or name it with --program)", exe)
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// inAllocation reports whether gorun runs inside a Slurm allocation (not a job step), where the
// job becomes a job step over the allocation's nodes, as gorun's jobs do.
func inAllocation(o *Options, environ func(string) (string, bool)) bool {
	_, job := environ("SLURM_JOB_ID")
	_, step := environ("SLURM_STEP_ID")
	return !o.NoSrun && o.NP == 0 && job && !step
}

// runSlurm runs the measuring jobs as job steps: one task per node of the allocation, or two
// tasks (shm and tcp) when it has one node.
func runSlurm(ctx context.Context, o *Options, exe string, environ func(string) (string, bool), p params, rep *Report, log io.Writer) error {
	rep.Mode = "slurm"
	srun, err := exec.LookPath("srun")
	if err != nil {
		return fmt.Errorf("inside a Slurm allocation (SLURM_JOB_ID is set) but srun is not on PATH: %v (use --no-srun to check this host)", err)
	}
	nodesVar, _ := environ("SLURM_JOB_NUM_NODES")
	if nodesVar == "" {
		nodesVar, _ = environ("SLURM_NNODES")
	}
	nodes, err := strconv.Atoi(nodesVar)
	if err != nil || nodes < 1 {
		return fmt.Errorf("SLURM_JOB_NUM_NODES=%q: not a node count", nodesVar)
	}
	np, ts := nodes, []string{"tcp"}
	if nodes == 1 {
		np, ts = 2, []string{"shm", "tcp"}
	}
	if o.Transports != nil {
		ts = o.Transports
	}
	for r := range np {
		rep.Hosts = append(rep.Hosts, HostReport{Name: "task" + strconv.Itoa(r), Reachable: true})
	}
	for i, t := range ts {
		if nodes > 1 && t == "shm" {
			continue
		}
		res := srunJob(ctx, srun, o, exe, np, nodes, p.withLabel(t))
		if i == 0 {
			// Name the hosts as Slurm placed the tasks, now that their facts tell.
			for _, f := range res.facts {
				if f.Rank < np {
					name := f.Host
					if nodes == 1 {
						name += "#" + strconv.Itoa(f.Rank)
					}
					rep.Hosts[f.Rank].Name = name
				}
			}
		}
		rep.addJob(t, res)
	}
	return nil
}

// srunJob runs one measuring job as a Slurm job step with the bootstrap contract's secret
// and settings (ranks learn their rank and size from Slurm).
func srunJob(ctx context.Context, srun string, o *Options, exe string, np, nodes int, p params) jobResult {
	var id [8]byte
	var secret [32]byte
	rand.Read(id[:])
	rand.Read(secret[:])
	args := []string{"-n", strconv.Itoa(np), "-N", strconv.Itoa(nodes), "--kill-on-bad-exit=1", "--input=none"}
	if nodes > 1 {
		args = append(args, "--ntasks-per-node=1")
	}
	args = append(append(args, exe), p.args()...)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, srun, args...)
	cmd.Env = append(os.Environ(), jobenv.JobID+"="+hex.EncodeToString(id[:]), jobenv.Secret+"="+hex.EncodeToString(secret[:]),
		jobenv.PeerTimeout+"="+o.PeerTimeout.String(), jobenv.Transport+"="+p.label)
	if p.label == "verbs" && nodes == 1 {
		cmd.Env = append(cmd.Env, jobenv.RDMADevice+"=softibv")
	}
	if o.Iface != "" {
		cmd.Env = append(cmd.Env, jobenv.Iface+"="+o.Iface)
	}
	out, errb := &capped{max: maxEvents}, &capped{max: maxStderr, keepTail: true}
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	res := parseEvents(out.String(), p.label)
	res.Code, res.Seconds = code, time.Since(start).Seconds()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		res.Error, res.Code = err.Error(), launcher.ExitFailure
	}
	if ctx.Err() != nil {
		res.Error = fmt.Sprintf("the job step did not end within --timeout %v", o.Timeout)
	}
	if res.Code != 0 || !res.Complete {
		res.Stderr = tail(errb.String(), 12)
	}
	return res
}
