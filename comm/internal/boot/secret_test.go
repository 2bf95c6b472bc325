package boot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJobSecret: where a job's secret comes from, and that a multi-host job without one
// refuses to start unless GORUN_INSECURE=1, which warns.
func TestJobSecret(t *testing.T) {
	torch := func(addr string, extra ...string) []string {
		return append([]string{"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=" + addr, "MASTER_PORT=29500"}, extra...)
	}
	for _, tc := range []struct {
		name    string
		env     []string
		secret  string // "" derived
		err     string
		warning string
	}{
		{"given", torch("10.99.0.1", "GORUN_SECRET=abc"), "abc", "", ""},
		{"multi-host without a secret", torch("10.99.0.1"), "", "GORUN_SECRET_FILE", ""},
		{"multi-host, insecure", torch("10.99.0.1", "GORUN_INSECURE=1"), "", "", "GORUN_INSECURE=1"},
		{"insecure must be 1", torch("10.99.0.1", "GORUN_INSECURE=yes"), "", "GORUN_SECRET", ""},
		{"loopback", torch("127.0.0.1"), "", "", ""},
		{"localhost", torch("localhost"), "", "", ""},
		{"one host by local size", torch("10.99.0.1", "LOCAL_WORLD_SIZE=4"), "", "", ""},
		{"two hosts by local size", torch("master-0", "LOCAL_WORLD_SIZE=2"), "", "LOCAL_WORLD_SIZE=2 of 4 ranks", ""},
		{"slurm one node", slurmStepEnv(1, "SLURM_STEP_NUM_NODES=1"), "", "", ""},
		{"slurm two nodes", slurmStepEnv(1, "SLURM_STEP_NUM_NODES=2"), "", "SLURM_STEP_NUM_NODES=2", ""},
		{"slurm allocation of one node", slurmStepEnv(1, "SLURM_NNODES=1"), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := FromEnv(envMap(tc.env...))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, "GORUN_SECRET")
				return
			}
			require.NoError(t, err)
			if tc.secret != "" {
				require.Equal(t, tc.secret, string(id.Secret))
			} else {
				require.True(t, strings.HasPrefix(string(id.Secret), "gorun-job:"), "derived secret expected")
			}
			if tc.warning == "" {
				require.Empty(t, id.Warning)
			} else {
				require.Contains(t, id.Warning, tc.warning)
				require.Contains(t, id.Warning, "rank 1")
			}
		})
	}
}

// TestSecretFile: GORUN_SECRET_FILE must be private to the user; its trailing newline is not
// part of the secret; size and contents are bounded.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	env := func(path string) func(string) string {
		return envMap("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.99.0.1", "MASTER_PORT=1", "GORUN_SECRET_FILE="+path)
	}
	open := write("open", "s3cret\n", 0o644)
	_, err := FromEnv(env(open))
	require.ErrorContains(t, err, open)
	require.ErrorContains(t, err, "mode 0644")

	private := write("private", "s3cret\n", 0o600)
	id, err := FromEnv(env(private))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(id.Secret))
	require.Empty(t, id.Warning)

	crlf := write("crlf", "s3cret\r\n", 0o400)
	id, err = FromEnv(env(crlf))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(id.Secret))

	for name, tc := range map[string]struct {
		path, want string
	}{
		"group":   {write("group", "x", 0o640), "mode 0640"},
		"empty":   {write("empty", "\n", 0o600), "is empty"},
		"large":   {write("large", strings.Repeat("x", maxSecretFile+1), 0o600), "larger than"},
		"missing": {filepath.Join(dir, "none"), "no such file"},
		"dir":     {dir, "not a regular file"},
	} {
		_, err := FromEnv(env(tc.path))
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.want, name)
			assert.Contains(t, err.Error(), "GORUN_SECRET_FILE", name)
		}
	}
}
