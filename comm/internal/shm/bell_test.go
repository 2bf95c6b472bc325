//go:build linux || darwin

package shm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestShmBell(t *testing.T) {
	seg := filepath.Join(t.TempDir(), "seg")
	b := CreateBell(seg)
	require.NotNil(t, b, "a temporary directory holds named pipes")
	defer b.Close()

	// Nothing rung: the wait lasts its timeout.
	start := time.Now()
	require.True(t, b.Wait(30*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 25*time.Millisecond)

	// A ring from a peer's write end ends a long wait at once, and several rings before the
	// wait cost one wake, not one each.
	fd, err := OpenPeerBell(seg+".bell", seg)
	require.NoError(t, err)
	defer unix.Close(fd)
	go func() {
		time.Sleep(20 * time.Millisecond)
		RingFD(fd)
	}()
	start = time.Now()
	require.True(t, b.Wait(10*time.Second))
	require.Less(t, time.Since(start), 5*time.Second)
	for range 3 {
		RingFD(fd)
	}
	RingFD(b.self)
	require.True(t, b.Wait(10*time.Second))
	start = time.Now()
	require.True(t, b.Wait(30*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 25*time.Millisecond, "stale bytes woke a later wait")

	// A full pipe drops the ring without blocking the producer.
	for range 1 << 17 {
		RingFD(fd)
	}
	require.True(t, b.Wait(time.Second))
}

func TestOpenPeerBellRejects(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(dir, "seg")
	// A path that is not the segment's bell, whatever it is.
	_, err := OpenPeerBell(filepath.Join(dir, "other.bell"), seg)
	require.ErrorContains(t, err, "not beside segment")
	// A regular file where the pipe should be: never written into.
	require.NoError(t, os.WriteFile(seg+".bell", []byte("data"), 0o600))
	_, err = OpenPeerBell(seg+".bell", seg)
	require.ErrorContains(t, err, "not a named pipe")
	got, _ := os.ReadFile(seg + ".bell")
	require.Equal(t, "data", string(got))
	// No pipe at all.
	_, err = OpenPeerBell(filepath.Join(dir, "gone")+".bell", filepath.Join(dir, "gone"))
	require.Error(t, err)
}
