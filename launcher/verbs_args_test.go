package launcher

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVerbsFlags(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	c, err := ParseArgs([]string{"-n", "2", "--transport", "verbs", "--rdma-device", "rdma_en2", "prog"}, noEnv, nil)
	require.NoError(t, err)
	require.Equal(t, "verbs", c.Transport)
	require.Equal(t, []string{"GORUN_RDMA_DEVICE=rdma_en2"}, c.Export)

	c, err = ParseArgs([]string{"--list-devices"}, noEnv, nil)
	require.NoError(t, err, "--list-devices needs neither -n nor PROGRAM")
	require.True(t, c.ListDevices)

	_, err = ParseArgs([]string{"-n", "2", "--transport", "rdma", "prog"}, noEnv, nil)
	require.ErrorContains(t, err, "want tcp, shm, verbs or auto")
}

func TestListDevices(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"--list-devices"}, nil, &out, &errb), errb.String())
	require.Contains(t, out.String(), "softibv\ttransport: Software")
	require.True(t, strings.Contains(out.String(), "PORT_ACTIVE"), out.String())
}
