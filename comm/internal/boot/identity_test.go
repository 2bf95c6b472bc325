package boot

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envMap(kv ...string) func(string) string {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// slurmStepEnv is what srun -n 4 gives task rank on one node (see RECIPES.md).
func slurmStepEnv(rank int, extra ...string) []string {
	return append([]string{"SLURM_PROCID=" + strconv.Itoa(rank), "SLURM_LOCALID=" + strconv.Itoa(rank), "SLURM_NODEID=0",
		"SLURM_NTASKS=4", "SLURM_STEP_NUM_TASKS=4", "SLURM_JOB_ID=42", "SLURM_STEP_ID=0",
		"SLURM_STEP_NODELIST=node[07-08]", "SLURM_JOB_NODELIST=node[07-08]"}, extra...)
}

func TestIdentityFromEnv(t *testing.T) {
	slurmPortOf42 := strconv.Itoa(derivedPort("slurm:42.0"))
	for _, tc := range []struct {
		name              string
		env               []string
		source            string
		rank, size, local int
		coord             string
		byLauncher        bool
	}{
		{"nothing", nil, "singleton", 0, 1, 0, "", false},
		{"gorun", []string{"GORUN_RANK=2", "GORUN_SIZE=3", "GORUN_LOCAL_RANK=1", "GORUN_COORD=10.0.0.1:5000"}, "gorun", 2, 3, 1, "10.0.0.1:5000", false},
		{"gorun serving", []string{"GORUN_RANK=0", "GORUN_SIZE=3", "GORUN_COORD=10.0.0.1:5000", "GORUN_COORD_LAUNCHER=1"}, "gorun", 0, 3, 0, "10.0.0.1:5000", true},
		{"slurm step", slurmStepEnv(3), "Slurm", 3, 4, 3, "node07:" + slurmPortOf42, false},
		{"slurm reserved ports", slurmStepEnv(1, "SLURM_STEP_RESV_PORTS=12021-12025"), "Slurm", 1, 4, 1, "node07:12021", false},
		{"slurm old names", []string{"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOBID=42", "SLURM_STEPID=0", "SLURM_JOB_NODELIST=a,b"}, "Slurm", 1, 2, 0, "a:" + slurmPortOf42, false},
		{"slurm with gorun's coordinator", slurmStepEnv(2, "GORUN_COORD=h:1"), "Slurm", 2, 4, 2, "h:1", false},
		// A batch script has SLURM_PROCID=0 and SLURM_NTASKS of the allocation, but is no step.
		{"sbatch script", []string{"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_ID=42"}, "singleton", 0, 1, 0, "", false},
		{"salloc shell", []string{"SLURM_NTASKS=4", "SLURM_JOB_ID=42"}, "singleton", 0, 1, 0, "", false},
		{"torchrun", []string{"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "MASTER_ADDR=master-0", "MASTER_PORT=23456"}, "torchrun", 5, 8, 1, "master-0:23456", false},
		{"torchrun in a slurm step", slurmStepEnv(0, "RANK=5", "WORLD_SIZE=8", "MASTER_ADDR=m", "MASTER_PORT=1"), "torchrun", 5, 8, 0, "m:1", false},
		{"mpirun one host", []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_MCA_ess_base_jobid=77"}, "Open MPI", 1, 2, 1, "127.0.0.1:" + strconv.Itoa(derivedPort("ompi:77")), false},
		{"mpirun in a slurm step", slurmStepEnv(0, "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "MASTER_ADDR=m", "MASTER_PORT=2"), "Open MPI", 1, 2, 0, "m:2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Most of these jobs span hosts, which needs a secret (TestJobSecret).
			id, err := FromEnv(envMap(append(tc.env, "GORUN_SECRET=k")...))
			require.NoError(t, err)
			assert.Equal(t, tc.source, id.Source)
			assert.Equal(t, [3]int{tc.rank, tc.size, tc.local}, [3]int{id.Rank, id.Size, id.LocalRank})
			assert.Equal(t, tc.coord, id.Coord)
			assert.Equal(t, tc.byLauncher, id.CoordByLauncher)
			if tc.size > 1 {
				assert.NotEmpty(t, id.Secret)
				assert.NotEmpty(t, id.JobID)
			}
		})
	}
}

func TestIdentityFromEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"GORUN_RANK=x", "GORUN_SIZE=2"}, `GORUN_RANK="x" is not an integer`},
		{[]string{"GORUN_RANK=2", "GORUN_SIZE=2", "GORUN_COORD=h:1"}, "do not describe a rank"},
		{[]string{"GORUN_RANK=1", "GORUN_SIZE=2"}, "no rendezvous address"},
		{[]string{"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m", "MASTER_PORT=http"}, `MASTER_PORT="http"`},
		{[]string{"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m"}, `MASTER_PORT=""`},
		{slurmStepEnv(1, "SLURM_STEP_NODELIST=node[1-"), "SLURM_STEP_NODELIST"},
		{slurmStepEnv(1, "SLURM_STEP_RESV_PORTS=none"), `SLURM_STEP_RESV_PORTS="none"`},
		{[]string{"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=a"}, "SLURM_JOB_ID"},
		{[]string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_JOB_ID=1"}, "SLURM_STEP_NODELIST"},
		// mpirun across hosts tells a rank nothing about rank 0's host.
		{[]string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_MCA_ess_base_jobid=7"}, "MASTER_ADDR"},
		{[]string{"GORUN_PEER_TIMEOUT=-1s"}, "not a positive duration"},
	} {
		_, err := FromEnv(envMap(tc.env...))
		if assert.Error(t, err, "%v", tc.env) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// A launcher's rendezvous that a rank never reaches names the missing ranks at its deadline,
// and a stop ends it early.
func TestServeRendezvousStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- ServeRendezvous(ln, 2, "j", "s", 0, stop) }()
	close(stop)
	select {
	case err := <-done:
		require.ErrorContains(t, err, "cancelled")
	case <-time.After(5 * time.Second):
		t.Fatal("ServeRendezvous did not stop")
	}
}
