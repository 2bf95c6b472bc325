package boot

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelloRejects(t *testing.T) {
	good := (&Hello{Kind: ConnMesh, Role: RoleDialer, Rank: 1, Size: 4, Job: 7}).Marshal()
	_, err := ParseHello(good)
	require.NoError(t, err)
	for name, mutate := range map[string]func(b []byte){
		"magic":   func(b []byte) { copy(b, "HTTP") },
		"version": func(b []byte) { binary.LittleEndian.PutUint16(b[4:], 99) },
		"kind":    func(b []byte) { b[6] = 9 },
		"rank":    func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 4) },
		"size":    func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 0) },
		"huge":    func(b []byte) { binary.LittleEndian.PutUint32(b[12:], MaxWorld+1) },
		"role":    func(b []byte) { b[7] = 3 },
		"no role": func(b []byte) { b[7] = 0 },
		// Only a launcher serving the rendezvous may claim to be one.
		"launcher dialing": func(b []byte) { binary.LittleEndian.PutUint32(b[8:], LauncherID) },
		"short":            func(b []byte) {},
	} {
		b := bytes.Clone(good)
		mutate(b)
		if name == "short" {
			b = b[:HelloSize-1]
		}
		_, err := ParseHello(b)
		require.Error(t, err, name)
	}
}

// FuzzParseHello: hellos decode only with the right magic and version and a sane rank.
func FuzzParseHello(f *testing.F) {
	f.Add((&Hello{Kind: ConnMesh, Role: RoleDialer, Rank: 1, Size: 4, Job: 7}).Marshal())
	f.Add((&Hello{Kind: ConnRendezvous, Role: RoleAcceptor, Rank: LauncherID, Size: 1}).Marshal())
	f.Add([]byte("GRUN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHello(b)
		if err != nil {
			return
		}
		if h.Rank == LauncherID {
			if h.Kind != ConnRendezvous || h.Role != RoleAcceptor {
				t.Fatalf("accepted a launcher hello of kind %d, role %d", h.Kind, h.Role)
			}
		} else if h.Rank >= h.Size {
			t.Fatalf("accepted rank %d of %d", h.Rank, h.Size)
		}
		if h.Role != RoleDialer && h.Role != RoleAcceptor {
			t.Fatalf("accepted role %d", h.Role)
		}
		if !bytes.Equal(h.Marshal(), b) {
			t.Fatal("hello re-encodes differently")
		}
	})
}
