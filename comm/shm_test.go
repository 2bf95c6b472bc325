//go:build linux || darwin

package comm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorun-hpc/gorun/comm/internal/shmtp"
)

// TestShmPingPongAllocs: a blocking Send and Recv of a small message over shared memory
// allocate nothing (comm/internal/shmtp/fast.go), in the steady state of a ping-pong and across truncated and
// zero-length receives that come between. Counted over the whole process: both goroutine
// ranks, and their background goroutines, which may allocate now and then, hence the average
// over many round trips.
func TestShmPingPongAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("counts allocations: not under -short or the race detector")
	}
	const runs = 2000
	err := runNet(2, "shm", func(c *Comm) error {
		buf, small := make([]byte, 8), make([]byte, 4)
		// A truncated receive ends in error and its operation is not reused; the next is.
		if c.Rank() == 0 {
			if err := Send(c, buf, 1, 3); err != nil {
				return err
			}
			if err := Send(c, buf[:0], 1, 3); err != nil {
				return err
			}
		} else {
			var te *TruncateError
			if st, err := Recv(c, small, 0, 3); !errors.As(err, &te) || st.Count != 8 {
				return fmt.Errorf("an 8-byte message into a 4-byte buffer: status %+v, error %v", st, err)
			}
			if st, err := Recv(c, small, 0, 3); err != nil || st.Count != 0 {
				return fmt.Errorf("empty message: status %+v, error %v", st, err)
			}
		}
		round := func() error {
			if c.Rank() == 0 {
				buf[0]++
				if err := Send(c, buf, 1, 1); err != nil {
					return err
				}
				want := buf[0] + 1
				if _, err := Recv(c, buf, 1, 1); err != nil {
					return err
				}
				if buf[0] != want {
					return fmt.Errorf("echo carries %d, want %d", buf[0], want)
				}
				return nil
			}
			if _, err := Recv(c, buf, 0, 1); err != nil {
				return err
			}
			buf[0]++
			return Send(c, buf, 0, 1)
		}
		if c.Rank() == 1 {
			for range runs + 1 { // AllocsPerRun's warm-up call and its runs
				if err := round(); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		allocs := testing.AllocsPerRun(runs, func() {
			if e := round(); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
		if allocs >= 1 {
			return fmt.Errorf("%v allocations per round trip, want none", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShmSplitCopy: large blocking sends over shared memory, taken by a split copy (the
// receiver reads the first part, the sender writes the rest), arrive whole for sizes around
// the threshold and not a multiple of a page, whether the receive was posted first or the
// message waited for it; and a truncating receive still gets its error. (The path where the
// sender cannot write into the receiver is comm/internal/shmtp's TestSplitCopyWriteRefused.)
func TestShmSplitCopy(t *testing.T) {
	sizes := []int{shmtp.EagerLimit + 1, shmtp.SplitMin - 1, shmtp.SplitMin, shmtp.SplitMin + 4097, 3<<20 + 123}
	err := runNet(2, "shm", func(c *Comm) error {
		for i, n := range sizes {
			if c.Rank() == 0 {
				msg := make([]byte, n)
				for j := range msg {
					msg[j] = byte(j*7 + i + j>>12)
				}
				if i%2 == 1 { // let the receive be posted first
					if _, err := Recv(c, []byte{0}, 1, 9); err != nil {
						return err
					}
				}
				if err := Send(c, msg, 1, i); err != nil {
					return err
				}
				continue
			}
			got := make([]byte, n+5)
			if i%2 == 1 {
				r := Irecv(c, got, 0, i)
				if err := Send(c, []byte{1}, 0, 9); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
			} else if _, err := Recv(c, got, 0, i); err != nil {
				return err
			}
			for j := range n {
				if want := byte(j*7 + i + j>>12); got[j] != want {
					return fmt.Errorf("%d-byte message: byte %d is %d, want %d", n, j, got[j], want)
				}
			}
		}
		if c.Rank() == 0 {
			return Send(c, make([]byte, 1<<20), 1, 99)
		}
		var te *TruncateError
		if _, err := Recv(c, make([]byte, 1000), 0, 99); !errors.As(err, &te) {
			return fmt.Errorf("1 MiB into 1000 bytes: error %v, want a truncation", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
