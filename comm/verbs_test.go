package comm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// verbsEnv runs a job over the software verbs device with the given queue pair type.
func verbsEnv(qp string, extra ...string) []string {
	env := []string{jobenv.Transport + "=verbs", jobenv.RDMADevice + "=" + ibv.SoftName}
	if qp == "uc-fallback" {
		env = append(env, ibv.SoftNoRCEnv+"=1") // RC creation fails as on Apple's stack
	} else {
		env = append(env, jobenv.VerbsQP+"="+qp)
	}
	return append(env, extra...)
}

// requireNoSoftRings: the software device's ring files are gone (unlinked once both ends map them).
func requireNoSoftRings(t *testing.T, before map[string]bool) {
	matches, _ := filepath.Glob(filepath.Join(jobenv.SegmentDir(), ibv.SoftFilePrefix+"*"))
	for _, m := range matches {
		require.True(t, before[m], "leftover %s", m)
	}
}

func softRings() map[string]bool {
	matches, _ := filepath.Glob(filepath.Join(jobenv.SegmentDir(), ibv.SoftFilePrefix+"*"))
	set := map[string]bool{}
	for _, m := range matches {
		set[m] = true
	}
	return set
}

// TestVerbsProcesses runs the whole check suite with real processes over the software verbs
// device: RC (zero-copy RDMA WRITE for large messages), UC (sequenced staging), and UC chosen
// because RC queue pairs are refused.
func TestVerbsProcesses(t *testing.T) {
	before := softRings()
	for _, tc := range []struct {
		qp string
		n  int
	}{{"rc", 2}, {"rc", 5}, {"uc", 3}, {"uc-fallback", 4}} {
		t.Run(fmt.Sprintf("%s/n=%d", tc.qp, tc.n), func(t *testing.T) {
			procs := startJob(t, tc.n, "checks", verbsEnv(tc.qp)...)
			codes := waitJob(t, procs, 120*time.Second)
			for r, code := range codes {
				require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			}
			if tc.qp == "uc-fallback" {
				require.Contains(t, procs[0].out.String(), "using UC")
			}
		})
	}
	requireNoSoftRings(t, before)
}

// TestVerbsLoss: the software device drops every 50th packet. On RC its adapter retransmits and
// the whole suite passes; on UC the protocol notices the lost message and every rank fails with
// an error naming a peer, within the peer timeout, instead of hanging or spinning.
func TestVerbsLoss(t *testing.T) {
	t.Run("rc", func(t *testing.T) {
		procs := startJob(t, 3, "checks", verbsEnv("rc", ibv.SoftDropEnv+"=50")...)
		codes := waitJob(t, procs, 120*time.Second)
		for r, code := range codes {
			require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
		}
	})
	t.Run("uc", func(t *testing.T) {
		start := time.Now()
		procs := startJob(t, 3, "checks", verbsEnv("uc", ibv.SoftDropEnv+"=50", jobenv.PeerTimeout+"=2s")...)
		codes := waitJob(t, procs, 60*time.Second)
		for r, code := range codes {
			require.NotEqual(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			t.Logf("rank %d: %s", r, procs[r].out.String())
		}
		require.Less(t, time.Since(start), 30*time.Second)
	})
}

// TestVerbsKilledPeer: kill -9 of a rank; the TCP liveness link tells the others at once,
// over RC and UC.
func TestVerbsKilledPeer(t *testing.T) {
	for _, qp := range []string{"rc", "uc"} {
		t.Run(qp, func(t *testing.T) {
			procs := startVictimJob(t, 3, verbsEnv(qp)...)
			start := time.Now()
			require.NoError(t, procs[1].cmd.Process.Signal(syscall.SIGKILL))
			codes := waitJob(t, procs, 30*time.Second)
			for _, r := range []int{0, 2} {
				require.Equal(t, 0, codes[r], "rank %d output:\n%s", r, procs[r].out.String())
				require.Contains(t, procs[r].out.String(), "closed by the peer")
			}
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// TestVerbsVanishedLink: rank 1's adapter goes dark mid-suite (a pulled cable: the process
// and its TCP link live on). The ranks talking to it stop getting acknowledgements and fail with
// an error naming it within the peer timeout (RC: or the adapter's retry counter); then every
// rank ends with an error, none hangs or spins.
func TestVerbsVanishedLink(t *testing.T) {
	for _, qp := range []string{"rc", "uc"} {
		t.Run(qp, func(t *testing.T) {
			start := time.Now()
			procs := startJob(t, 3, "checks", verbsEnv(qp, jobenv.PeerTimeout+"=2s", ibv.SoftVanishEnv+"=300", ibv.SoftVanishRankEnv+"=1")...)
			codes := waitJob(t, procs, 60*time.Second)
			cause, named := false, false
			for r, code := range codes {
				out := procs[r].out.String()
				require.NotEqual(t, 0, code, "rank %d output:\n%s", r, out)
				t.Logf("rank %d: %s", r, strings.TrimSpace(out))
				// Whoever noticed first names the RDMA link; the others may learn of it
				// through a TCP link closing, rank 1's or (a cascade) each other's.
				named = named || r != 1 && strings.Contains(out, ": rank 1: ")
				cause = cause || strings.Contains(out, "no acknowledgement over RDMA") || strings.Contains(out, "retry counter exceeded")
			}
			require.True(t, named, "neither rank 0 nor rank 2 named rank 1")
			require.True(t, cause, "no rank reported the vanished RDMA link")
			require.Less(t, time.Since(start), 30*time.Second)
		})
	}
}

// TestVerbsWaitingRankIdles: a rank blocked in Recv for two seconds over verbs polls, then naps:
// it uses a small fraction of a core (jaccl spun a full core forever).
func TestVerbsWaitingRankIdles(t *testing.T) {
	procs := startJob(t, 2, "idle-wait", verbsEnv("uc")...)
	codes := waitJob(t, procs, 60*time.Second)
	t.Logf("verbs: %s", strings.TrimSpace(procs[1].out.String()))
	require.Equal(t, 0, codes[0], procs[0].out.String())
	require.Equal(t, 0, codes[1], procs[1].out.String())
}

// TestVerbsHardware runs the check suite over the first real RDMA device (both queue pair types
// it offers); it skips, saying why, without one.
func TestVerbsHardware(t *testing.T) {
	if !ibv.Hardware() {
		t.Skip("built without libibverbs: go test -tags verbs")
	}
	names, err := ibv.HardwareNames()
	require.NoError(t, err)
	if len(names) == 0 {
		t.Skip("no RDMA device: ibv_devices lists none")
	}
	for _, qp := range []string{"auto", "uc"} {
		t.Run(qp, func(t *testing.T) {
			procs := startJob(t, 2, "checks", jobenv.Transport+"=verbs", jobenv.VerbsQP+"="+qp)
			codes := waitJob(t, procs, 120*time.Second)
			for r, code := range codes {
				require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			}
		})
	}
}

// TestVerbsMesh: every rank reaches each peer through its own software adapter (as a Mac in a
// Thunderbolt mesh has one device per cable), named by a jaccl-style device matrix file.
func TestVerbsMesh(t *testing.T) {
	const n = 4
	m := make([][]*string, n)
	for i := range m {
		m[i] = make([]*string, n)
		for j := range m[i] {
			if i != j {
				name := fmt.Sprintf("%s%d", ibv.SoftName, j)
				m[i][j] = &name
			}
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "mesh.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	procs := startJob(t, n, "checks", jobenv.Transport+"=verbs", jobenv.RDMADevice+"=@"+path, ibv.SoftNoRCEnv+"=1")
	codes := waitJob(t, procs, 120*time.Second)
	for r, code := range codes {
		require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
	}
}

// BenchmarkVerbsPingPong: BenchmarkPingPong over the software verbs device.
//
//	go test -run '^$' -bench VerbsPingPong ./comm/
func BenchmarkVerbsPingPong(b *testing.B) {
	b.Setenv(jobenv.RDMADevice, ibv.SoftName)
	for _, qp := range []string{"rc", "uc"} {
		b.Run(qp, func(b *testing.B) {
			b.Setenv(jobenv.VerbsQP, qp)
			benchPingPong(b, "verbs")
		})
	}
}

// TestVerbsStress: the stress role (random destinations, tags and sizes up to 200 KiB, every
// message checksummed and sequenced) among 3 processes over softibv: UC, and RC with every
// 97th packet dropped (and retransmitted by the emulated adapter).
func TestVerbsStress(t *testing.T) {
	if testing.Short() {
		t.Skip("long: runs in .ci/steps/60-verbs.sh")
	}
	for qp, faults := range map[string][]string{"uc": nil, "rc": {ibv.SoftDropEnv + "=97"}} {
		t.Run(qp, func(t *testing.T) {
			procs := startJob(t, 3, "stress", verbsEnv(qp, faults...)...)
			codes := waitJob(t, procs, 300*time.Second)
			for r, code := range codes {
				require.Equal(t, 0, code, "rank %d output:\n%s", r, procs[r].out.String())
			}
			require.Contains(t, procs[0].out.String(), "stress ok")
		})
	}
}

// TestVerbsBadDevice: a device that does not exist fails Init on every rank with an error
// naming it, instead of a hang in the setup.
func TestVerbsBadDevice(t *testing.T) {
	procs := startJob(t, 3, "checks", jobenv.Transport+"=verbs", jobenv.RDMADevice+"=mlx5_nowhere")
	codes := waitJob(t, procs, 60*time.Second)
	for r, code := range codes {
		require.Equal(t, 10, code, "rank %d output:\n%s", r, procs[r].out.String())
		require.Contains(t, procs[r].out.String(), `"mlx5_nowhere"`)
	}

	// Only rank 2 lacks its device: it fails, and the others' setup ends with an error rather
	// than waiting for it.
	path := filepath.Join(t.TempDir(), "mesh.json")
	require.NoError(t, os.WriteFile(path, []byte(`[[null,"softibv","softibv"],["softibv",null,"softibv"],["mlx5_nowhere","mlx5_nowhere",null]]`), 0o600))
	procs = startJob(t, 3, "checks", jobenv.Transport+"=verbs", jobenv.RDMADevice+"=@"+path)
	codes = waitJob(t, procs, 60*time.Second)
	require.Equal(t, 10, codes[2], procs[2].out.String())
	require.Contains(t, procs[2].out.String(), `"mlx5_nowhere"`)
	for _, r := range []int{0, 1} {
		require.Equal(t, 10, codes[r], "rank %d output:\n%s", r, procs[r].out.String())
		require.Contains(t, procs[r].out.String(), "RDMA setup")
	}
	// Rank 0 gathers the setup, so it learns of rank 2 first; rank 1 may hear of rank 0.
	require.Contains(t, procs[0].out.String(), "rank 2")
}
