package launcher

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// SrunArgs is the srun command line gorun hands a job to inside a Slurm allocation. Ranks
// bootstrap from the job step's variables (package comm: rank 0 at the step's first node);
// --kill-on-bad-exit gives gorun's "one failing rank ends the job".
func SrunArgs(c *Command, exe string) []string {
	args := []string{"srun", "-n", strconv.Itoa(c.NP), "--kill-on-bad-exit=1"}
	if c.TagOutput {
		args = append(args, "--label")
	}
	if c.StdinRank >= 0 {
		args = append(args, "--input="+strconv.Itoa(c.StdinRank))
	} else {
		args = append(args, "--input=none")
	}
	if c.MapBy == "node" {
		args = append(args, "--distribution=cyclic")
	}
	args = append(args, exe)
	return append(args, c.Args...)
}

// srunEnv is gorun's environment (srun passes it on to every task) with the -x exports and
// the job's secret and settings of the bootstrap contract. No rank or size: each task learns
// those from Slurm.
func srunEnv(c *Command, environ []string) ([]string, error) {
	id, err := newJobSecret()
	if err != nil {
		return nil, err
	}
	env := append(append([]string{}, environ...), c.Export...)
	env = append(env, jobenv.JobID+"="+id.ID, jobenv.Secret+"="+id.Secret)
	return append(env, settingsEnv(c.PeerTimeout, c.Transport, c.Iface)...), nil
}

// runSrun runs the job as a Slurm job step and returns srun's exit code (which is the highest
// of the tasks', as Slurm reports it). gorun's SIGINT, SIGTERM and SIGHUP become a SIGTERM to
// srun, which cancels the step; SIGQUIT, SIGUSR1 and SIGUSR2 are passed to srun, which passes
// them to the tasks. --timeout sends SIGTERM, then SIGKILL after --kill-grace.
func runSrun(c *Command, exe string, sigs <-chan os.Signal, stdout, stderr io.Writer) int {
	argv := SrunArgs(c, exe)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "gorun: inside a Slurm allocation (SLURM_JOB_ID is set) but srun is not on PATH: %v (use --no-srun to run on this host)\n", err)
		return ExitFailure
	}
	env, err := srunEnv(c, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "gorun: %v\n", err)
		return ExitFailure
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if c.StdinRank < 0 {
		cmd.Stdin = nil
	}
	// Its own process group: a terminal's Ctrl-C reaches gorun, which decides what srun gets
	// (srun alone would only print the step's state on a single SIGINT).
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gorun: start srun: %v\n", err)
		return ExitFailure
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var timeoutC, killC <-chan time.Time
	if c.Timeout > 0 {
		timeoutC = time.After(c.Timeout)
	}
	code := -1
	stop := func(why int) {
		if code < 0 {
			code = why
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if killC == nil {
			killC = time.After(max(c.KillGrace, time.Second) + 5*time.Second)
		}
	}
	for {
		select {
		case <-done:
			if code >= 0 {
				return code
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return cmd.ProcessState.ExitCode()
		case sig := <-sigs:
			sn, _ := sig.(syscall.Signal)
			switch sn {
			case syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2:
				_ = cmd.Process.Signal(sn)
			default:
				fmt.Fprintf(stderr, "gorun: received %v; cancelling the job step\n", sig)
				stop(128 + int(sn))
			}
		case <-timeoutC:
			fmt.Fprintf(stderr, "gorun: job timed out after %v; cancelling the job step\n", c.Timeout)
			stop(ExitTimeout)
		case <-killC:
			fmt.Fprintf(stderr, "gorun: srun still running after SIGTERM; sending SIGKILL\n")
			_ = cmd.Process.Kill()
		}
	}
}
