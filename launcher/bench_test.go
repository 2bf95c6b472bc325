package launcher

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Launcher overheads side by side with Open MPI's mpirun (when it is on PATH), in one run:
//
//	go test -run XXX -bench . -benchtime 5x ./launcher
//
// Startup: a job of 4 ranks of /bin/true, from exec of the launcher to its exit.
// Teardown: rank 1 exits 3 while the others sleep: how long until the launcher has killed them
// and exited with 3 (Open MPI's figure on this machine is 1.7 s, see ANCHORS.md).

const teardownScript = `r=${GORUN_RANK:-$OMPI_COMM_WORLD_RANK}; [ "$r" = 1 ] && exit 3; exec sleep 60`

func buildGorun(b *testing.B) string {
	b.Helper()
	exe := filepath.Join(b.TempDir(), "gorun")
	if out, err := exec.Command("go", "build", "-o", exe, "../cmd/gorun").CombinedOutput(); err != nil {
		b.Fatalf("build gorun: %v\n%s", err, out)
	}
	return exe
}

func launchers(b *testing.B) map[string][]string {
	l := map[string][]string{"gorun": {buildGorun(b), "-n", "4"}}
	if mpirun, err := exec.LookPath("mpirun"); err == nil {
		l["mpirun"] = []string{mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "4"}
	}
	return l
}

func BenchmarkStartup(b *testing.B) {
	for _, name := range []string{"gorun", "mpirun"} {
		cmd, ok := launchers(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(cmd[0], append(cmd[1:], "/bin/true")...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", cmd, err, out)
				}
			}
		})
	}
}

func BenchmarkTeardown(b *testing.B) {
	for _, name := range []string{"gorun", "mpirun"} {
		cmd, ok := launchers(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				err := exec.Command(cmd[0], append(cmd[1:], "/bin/sh", "-c", teardownScript)...).Run()
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ExitCode() != 3 {
					b.Fatalf("%s exited with %v, want code 3", name, err)
				}
			}
		})
	}
}
