package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

func TestDeviceMatrix(t *testing.T) {
	names, err := DeviceNames("mlx5_0", 1, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"mlx5_0", "mlx5_0", "mlx5_0"}, names)

	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, fmt.Sprintf("m%d.json", len(s)))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return "@" + p
	}
	names, err = DeviceNames(write(`[[null,"rdma_en2","rdma_en3"],["rdma_en2",null,"rdma_en4"],["rdma_en3","rdma_en4",null]]`), 1, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"rdma_en2", "", "rdma_en4"}, names)
	for spec, want := range map[string]string{
		`[[null]]`:                       "1 rows for a job of 3 ranks",
		`[[null,"a"],["b",null],[null]]`: "row 0 has 2 entries, want 3",
		`[["x","a","b"],["a",null,"c"],["b","c",null]]`: `row 0 names a device ("x") for the rank itself`,
		`[[null,"","b"],["a",null,"c"],["b","c",null]]`: "row 0, column 1: no device for rank 0 to reach rank 1",
		`{"rdma": 1}`: "want a JSON matrix of device names",
	} {
		_, err := DeviceNames(write(spec), 0, 3)
		require.ErrorContains(t, err, want, spec)
	}
	_, err = DeviceNames("@"+filepath.Join(dir, "absent.json"), 0, 3)
	require.ErrorContains(t, err, "absent.json")
}

// FuzzDeviceMatrix: a device matrix file never panics its parser, and what it accepts names a
// device for every pair of distinct ranks.
func FuzzDeviceMatrix(f *testing.F) {
	f.Add([]byte(`[[null,"rdma_en2"],["rdma_en2",null]]`), 2)
	f.Add([]byte(`[[null,"a","b"],["a",null,"c"],["b","c",null]]`), 3)
	f.Add([]byte(`[[null]]`), 1)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		if size < 1 || size > 64 {
			return
		}
		m, err := ParseDeviceMatrix(b, size)
		if err != nil {
			return
		}
		for i := range size {
			for j := range size {
				if (i == j) != (m[i][j] == nil) || (i != j && *m[i][j] == "") {
					t.Fatalf("accepted a bad entry at %d,%d", i, j)
				}
			}
		}
	})
}

func TestForcedGIDIndex(t *testing.T) {
	gid := func(b byte) ibv.GID { return ibv.GID{0xfe, 0x80, 15: b} }
	local := []ibv.GIDEntry{{Index: 0, GID: gid(1)}, {Index: 1, GID: gid(2)}}
	remote := []ibv.GIDEntry{{Index: 0, GID: gid(3)}, {Index: 1, GID: gid(4)}}
	idx, g, err := PairGID(local, remote)
	require.NoError(t, err)
	require.Equal(t, 0, idx)
	require.Equal(t, gid(3), g)
	t.Setenv(jobenv.RDMAGIDIndex, "1")
	idx, g, err = PairGID(local, remote)
	require.NoError(t, err)
	require.Equal(t, 1, idx)
	require.Equal(t, gid(4), g)
	t.Setenv(jobenv.RDMAGIDIndex, "2")
	_, _, err = PairGID(local, remote)
	require.ErrorContains(t, err, "this port has no GID at that index")
	t.Setenv(jobenv.RDMAGIDIndex, "x")
	_, _, err = PairGID(local, remote)
	require.ErrorContains(t, err, "want a GID table index")
}
