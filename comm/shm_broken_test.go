//go:build linux || darwin

package comm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// TestShmBrokenRingFailsLink: a record of an unknown type in the ring (a peer of another build,
// or memory written through a stray pointer) ends the link with an error naming the peer on
// the reader, and the writer hears of it; nobody hangs. The reader finds it while it holds the
// rings' poll lock, which failing the link must not take again.
func TestShmBrokenRingFailsLink(t *testing.T) {
	var verdict [2]error // each rank's own; runNet's error also carries how the link ended
	body := func(c *Comm) error {
		buf := make([]byte, 8)
		if c.Rank() == 0 {
			var p *shmPeer
			for _, tr := range c.w.transports() {
				if s, ok := tr.(*shmTransport); ok {
					p = s.peers[1]
				}
			}
			if p == nil {
				return errors.New("no shared-memory link to rank 1")
			}
			h := wire.Header{Type: 0x7e, Tag: 1}
			p.out.Mu.Lock()
			ok := p.ringWrite(&h, nil)
			p.out.Mu.Unlock()
			if !ok {
				return errors.New("the ring had no room for one record")
			}
			p.wakePeer()
			// Rank 1 fails its link and finishes: this receive must end in an error.
			if _, err := Recv(c, buf, 1, 2); err == nil {
				return errors.New("a receive from rank 1 succeeded after rank 1 broke the link")
			}
			return nil
		}
		_, err := Recv(c, buf, 0, 1)
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Rank != 0 || !strings.Contains(err.Error(), "corrupt shared-memory ring") {
			return fmt.Errorf("receive after a record of unknown type: %v, want rank 0's corrupt ring", err)
		}
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runNet(2, "shm", func(c *Comm) error {
			err := body(c)
			verdict[c.Rank()] = err
			return err
		})
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a broken shared-memory ring hung the job")
	}
	for r, err := range verdict {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
