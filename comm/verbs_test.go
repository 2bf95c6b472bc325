package comm

import (
	"fmt"
	"path/filepath"
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
