package rdmadev

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDevices: the values describe the devices and ports List prints, the
// software device among them.
func TestDevices(t *testing.T) {
	_, devs, err := Devices()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, List(&buf))
	soft := false
	for _, d := range devs {
		assert.Contains(t, buf.String(), d.Name+"\ttransport: ")
		soft = soft || d.Soft
		for _, p := range d.Ports {
			if p.Err == "" {
				assert.Contains(t, buf.String(), p.State)
				for _, g := range p.GIDs {
					// The software device draws its GID per open: compare the kind, not the value.
					assert.Contains(t, buf.String(), fmt.Sprintf("GID[%d]\t", g.Index))
					assert.Equal(t, strings.HasPrefix(g.GID, "fe80:"), g.LinkLocal, g.GID)
				}
			}
		}
	}
	assert.True(t, soft, "the software device is listed")
}
