package comm

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/internal/shmtp"
)

func TestChecks(t *testing.T) {
	for _, tc := range transports {
		for n := 1; n <= 8; n++ {
			t.Run(fmt.Sprintf("%s/n=%d", tc.name, n), func(t *testing.T) {
				if testing.Short() && n > 4 && n != 5 && n != 7 {
					t.Skip("short")
				}
				err := tc.run(n, func(c *Comm) error {
					for _, ch := range checks {
						if err := ch.fn(c); err != nil {
							return fmt.Errorf("%s: %w", ch.name, err)
						}
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

// Test64MiB moves one 64 MiB message each way between two ranks.
func Test64MiB(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.run(2, func(c *Comm) error {
				out := make([]byte, 64<<20)
				fill(out, c.Rank())
				in := make([]byte, 64<<20)
				other := 1 - c.Rank()
				if _, err := Sendrecv(c, out, other, 1, in, other, 1); err != nil {
					return err
				}
				return expectPattern(in, other, "64MiB")
			}))
		})
	}
}

// TestPeerDeathUnblocksRecv: a rank that fails while others wait on it makes every waiting
// rank return a PeerError naming it, promptly.
func TestPeerDeathUnblocksRecv(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			boom := errors.New("boom")
			start := time.Now()
			var waiterErrs [4]error
			// The waiters return only when all have their error, so that a waiter that
			// posts late sees rank 2 gone and no other rank.
			var recorded sync.WaitGroup
			recorded.Add(3)
			err := tc.run(4, func(c *Comm) error {
				if c.Rank() != 2 {
					defer recorded.Wait()
					defer recorded.Done()
				}
				switch c.Rank() {
				case 2:
					time.Sleep(50 * time.Millisecond)
					return boom
				case 0:
					_, err := Recv(c, make([]byte, 8), 2, 0) // specific source
					waiterErrs[0] = err
				case 1:
					_, err := Recv(c, make([]byte, 8), AnySource, 0)
					waiterErrs[1] = err
				case 3:
					err := Send(c, make([]byte, 1<<20), 2, 0) // rendezvous never answered
					waiterErrs[3] = err
				}
				return nil
			})
			require.Error(t, err)
			require.ErrorIs(t, err, boom)
			require.Less(t, time.Since(start), 10*time.Second)
			for _, r := range []int{0, 1, 3} {
				var pe *PeerError
				require.ErrorAs(t, waiterErrs[r], &pe, "rank %d", r)
				require.Equal(t, 2, pe.Rank, "rank %d", r)
			}
		})
	}
}

func TestAbortInproc(t *testing.T) {
	err := Run(3, func(c *Comm) error {
		if c.Rank() == 1 {
			c.Abort(7)
		}
		_, err := Recv(c, make([]byte, 1), 1, 0)
		return err
	})
	var ae *AbortError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 1, ae.Rank)
	require.Equal(t, 7, ae.Code)
}

func TestPanicBecomesError(t *testing.T) {
	err := Run(2, func(c *Comm) error {
		if c.Rank() == 0 {
			panic("kaboom")
		}
		_, err := Recv(c, make([]byte, 1), 0, 0)
		return err
	})
	require.ErrorContains(t, err, "kaboom")
}

func TestBadArguments(t *testing.T) {
	require.Error(t, Run(0, func(*Comm) error { return nil }))
	require.NoError(t, Run(2, func(c *Comm) error {
		require.Error(t, Send(c, []byte{1}, 2, 0), "destination out of range")
		require.Error(t, Send(c, []byte{1}, -1, 0))
		require.Error(t, Send(c, []byte{1}, 0, -5), "negative tag")
		require.Error(t, Send(c, []byte{1}, 0, MaxTag))
		_, err := Recv(c, []byte{1}, 7, 0)
		require.Error(t, err)
		_, err = c.Split(-3, 0)
		require.Error(t, err)
		return nil
	}))
}

func TestSingletonSelfMessages(t *testing.T) {
	c := singleton()
	require.Equal(t, 0, c.Rank())
	require.Equal(t, 1, c.Size())
	req := Irecv(c, make([]byte, 3), 0, 1)
	require.NoError(t, Send(c, []byte("abc"), 0, 1))
	st, err := req.Wait()
	require.NoError(t, err)
	require.Equal(t, 3, st.Count)
	require.NoError(t, c.Finalize())
	require.ErrorIs(t, Send(c, []byte{1}, 0, 0), ErrClosed)
}

func TestCollTagsAgree(t *testing.T) {
	require.NoError(t, Run(3, func(c *Comm) error {
		tags := []int{c.nextCollTag(), c.collComm().nextCollTag(), c.nextCollTag()}
		all := make([]int, 9)
		copy(all[3*c.Rank():], tags)
		for r := 0; r < 3; r++ {
			if _, err := Sendrecv(c, tags, (c.Rank()+r)%3, 0, all[3*((c.Rank()+3-r)%3):3*((c.Rank()+3-r)%3)+3], (c.Rank()+3-r)%3, 0); err != nil {
				return err
			}
		}
		for r := 1; r < 3; r++ {
			for i := 0; i < 3; i++ {
				if all[3*r+i] != all[i] || all[i] < collTagBase || all[i] >= MaxTag {
					return fmt.Errorf("coll tags differ: %v", all)
				}
			}
		}
		return nil
	}))
}

// TestPatientView: a Patient view is the same communicator as its parent: messages cross
// between the two both ways, eager and rendezvous sizes, blocking and not, also when the
// patient side waits long enough to sleep; its requests wait without polling first, and what
// it splits off is an ordinary communicator.
func TestPatientView(t *testing.T) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.run(2, func(c *Comm) error {
				p := c.Patient()
				if p.Patient() != p || p.Rank() != c.Rank() || p.Size() != c.Size() {
					return errors.New("Patient: not a view of the same communicator")
				}
				other := 1 - c.Rank()
				for i, n := range []int{0, 8, shmtp.EagerLimit + 1, 4 << 20} {
					out := make([]byte, n)
					fill(out, c.Rank())
					in := make([]byte, n)
					tag := 10 + i
					if c.Rank() == 0 {
						// Patient send, ordinary receive; then the peer answers late, so that the
						// patient receive sleeps before the message comes.
						if err := Send(p, out, other, tag); err != nil {
							return err
						}
						r := Irecv(p, in, other, tag)
						if !r.Patient {
							return errors.New("a request on the Patient view is not patient")
						}
						if _, err := r.Wait(); err != nil {
							return err
						}
					} else {
						if _, err := Recv(c, in, other, tag); err != nil {
							return err
						}
						time.Sleep(20 * time.Millisecond)
						if err := Send(c, out, other, tag); err != nil {
							return err
						}
					}
					if err := expectPattern(in, other, fmt.Sprintf("%d bytes", n)); err != nil {
						return err
					}
				}
				r := Isend(c, []byte{1}, c.Rank(), 99)
				if r.Patient {
					return errors.New("a request on the parent is patient")
				}
				if _, err := Recv(c, make([]byte, 1), c.Rank(), 99); err != nil {
					return err
				}
				if _, err := r.Wait(); err != nil {
					return err
				}
				sub, err := p.Split(0, c.Rank())
				if err != nil {
					return err
				}
				if sub.patient {
					return errors.New("Split of a Patient view is patient")
				}
				return nil
			}))
		})
	}
}
