package launcher

import (
	"os/exec"
	"strings"
	"testing"
)

// The launcher reaches the bootstrap protocol through comm/bootstrap, which links no transport:
// neither package may depend on comm itself (the shared-memory and RDMA stacks) or on the
// transports' own packages.
func TestLauncherLinksNoTransport(t *testing.T) {
	for _, pkg := range []string{ModulePath + "/launcher", ModulePath + "/comm/bootstrap"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch dep {
			case ModulePath + "/comm", ModulePath + "/comm/internal/tcp", ModulePath + "/comm/internal/verbs",
				ModulePath + "/comm/internal/shm", ModulePath + "/comm/internal/shmtp", ModulePath + "/comm/internal/core",
				ModulePath + "/comm/internal/inproc", ModulePath + "/comm/internal/verbstp":
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
