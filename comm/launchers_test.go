package comm

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/bootstrap"
)

// Jobs whose ranks learn their identity from other launchers' variables, and a job whose
// rendezvous a launcher serves, run the check suite with real processes.
func TestLaunchersOtherThanGorun(t *testing.T) {
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORUN_") && !strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, "OMPI_") {
			base = append(base, kv)
		}
	}
	for _, tc := range []struct {
		name   string
		n      int
		env    func(r int, port string) []string
		server bool
	}{
		{"slurm", 3, func(r int, port string) []string {
			return []string{"SLURM_PROCID=" + strconv.Itoa(r), "SLURM_LOCALID=" + strconv.Itoa(r), "SLURM_STEP_NUM_TASKS=3",
				"SLURM_JOB_ID=9", "SLURM_STEP_ID=1", "SLURM_STEP_NODELIST=127.0.0.1", "SLURM_STEP_RESV_PORTS=" + port + "-" + port}
		}, false},
		{"torchrun", 2, func(r int, port string) []string {
			return []string{"RANK=" + strconv.Itoa(r), "WORLD_SIZE=2", "LOCAL_RANK=" + strconv.Itoa(r), "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}
		}, false},
		{"launcher serves", 3, func(r int, port string) []string {
			return []string{"GORUN_RANK=" + strconv.Itoa(r), "GORUN_SIZE=3", "GORUN_COORD=127.0.0.1:" + port, "GORUN_COORD_LAUNCHER=1",
				"GORUN_JOB_ID=served", "GORUN_SECRET=s3cret"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var port string
			stop := make(chan struct{})
			served := make(chan error, 1)
			if tc.server {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				_, port, _ = net.SplitHostPort(ln.Addr().String())
				go func() { served <- bootstrap.ServeRendezvous(ln, tc.n, "served", "s3cret", 0, stop) }()
			} else {
				_, port, _ = net.SplitHostPort(freePort(t))
			}
			defer close(stop)
			procs := make([]*proc, tc.n)
			for r := range procs {
				p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
				p.cmd.Env = append(append(append([]string{}, base...), roleVar+"=checks"), tc.env(r, port)...)
				p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
				require.NoError(t, p.cmd.Start())
				procs[r] = p
			}
			for r, code := range waitJob(t, procs, 120*time.Second) {
				require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			}
			if tc.server {
				require.NoError(t, <-served)
			}
		})
	}
}
