package ibv

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func gid(s string) GID {
	var g GID
	copy(g[:], net.ParseIP(s).To16())
	return g
}

func TestPairGID(t *testing.T) {
	// A mlx5 RoCE port: v1 and v2 entries for the link-local and the IPv4 address.
	roce := []GIDEntry{
		{0, gid("fe80::ac0:ebff:feda:1cfb"), "IB/RoCE v1"}, {1, gid("fe80::ac0:ebff:feda:1cfb"), "RoCE v2"},
		{2, gid("::ffff:10.0.0.6"), "IB/RoCE v1"}, {3, gid("::ffff:10.0.0.6"), "RoCE v2"},
	}
	roce2 := []GIDEntry{{0, gid("fe80::1"), "IB/RoCE v1"}, {1, gid("fe80::1"), "RoCE v2"}, {2, gid("::ffff:10.0.0.7"), "IB/RoCE v1"}, {3, gid("::ffff:10.0.0.7"), "RoCE v2"}}
	// Apple Thunderbolt: link-local only until the port has an IPv4 address; then also mapped.
	tbBare := []GIDEntry{{0, gid("fe80::347c:94ff:fecd:45c4"), ""}}
	tbV4 := []GIDEntry{{0, gid("fe80::1c:2ff:fe3a:11"), ""}, {1, gid("::ffff:169.254.10.1"), ""}}
	tbV4b := []GIDEntry{{0, gid("fe80::1c:2ff:fe3a:22"), ""}, {1, gid("::ffff:169.254.10.2"), ""}}
	for _, tc := range []struct {
		name          string
		local, remote []GIDEntry
		index         int
		remoteGID     string
	}{
		{"roce v2 ipv4", roce, roce2, 3, "::ffff:10.0.0.7"},
		{"thunderbolt, no ipv4", tbBare, tbV4, 0, "fe80::1c:2ff:fe3a:11"},
		{"thunderbolt, only the remote has ipv4", tbV4, tbBare, 0, "fe80::347c:94ff:fecd:45c4"},
		{"thunderbolt, both ipv4", tbV4, tbV4b, 1, "::ffff:169.254.10.2"},
		{"zero entries skipped", []GIDEntry{{0, GID{}, ""}, {5, gid("2001:db8::5"), "RoCE v2"}}, []GIDEntry{{2, gid("2001:db8::9"), ""}}, 5, "2001:db8::9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, g, err := PairGID(tc.local, tc.remote)
			require.NoError(t, err)
			require.Equal(t, tc.index, idx)
			require.Equal(t, gid(tc.remoteGID), g)
		})
	}
	_, _, err := PairGID([]GIDEntry{{0, gid("::ffff:10.0.0.1"), ""}}, tbBare)
	require.ErrorContains(t, err, "no GID kind in common")
	_, _, err = PairGID(nil, tbBare)
	require.ErrorContains(t, err, "empty GID table")
}

func TestGIDKinds(t *testing.T) {
	require.True(t, gid("::ffff:1.2.3.4").IsIPv4Mapped())
	require.False(t, gid("fe80::1").IsIPv4Mapped())
	require.True(t, gid("fe80::1").IsLinkLocal())
	require.False(t, gid("2001:db8::1").IsLinkLocal())
	require.Equal(t, "::ffff:1.2.3.4", gid("::ffff:1.2.3.4").String())
	require.Equal(t, 4096, MTUBytes(5))
	require.Equal(t, 0, MTUBytes(9))
}
