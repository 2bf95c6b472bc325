//go:build linux || darwin

package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm/internal/shmtp"
)

// TestShmFastboxOrder: messages of every path between two ranks (fastbox, ring, rendezvous)
// in a random mix of sizes and two tags, sent by Send and by Isend, arrive in the order sent per
// tag, received by blocking Recv (the fast receive), by Irecv (at once when the message is
// there), with AnyTag, and out of order across tags (the later
// tag's message first, so the earlier one waits in the engine's queue), while the receiver
// lags now and then so that the fastbox fills and the sender falls back to the ring.
func TestShmFastboxOrder(t *testing.T) {
	const msgs = 1500
	sizes := func(i int) (int, int) {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		var n int
		switch rng.IntN(8) {
		case 0, 1, 2:
			n = 4 + rng.IntN(29) // one line of the fastbox
		case 3, 4:
			n = 4 + rng.IntN(shmtp.FastMax-3) // fastbox
		case 5, 6:
			n = shmtp.FastMax + 1 + rng.IntN(shmtp.EagerLimit-shmtp.FastMax) // ring
		default:
			n = shmtp.EagerLimit + 1 + rng.IntN(64<<10) // rendezvous
		}
		return n, 1 + rng.IntN(2)
	}
	fill := func(b []byte, i int) {
		binary.LittleEndian.PutUint32(b, uint32(i))
		for j := 4; j < len(b); j++ {
			b[j] = byte(i*31 + j)
		}
	}
	err := runNet(2, "shm", func(c *Comm) error {
		if c.Rank() == 0 {
			for i := range msgs {
				n, tag := sizes(i)
				b := make([]byte, n)
				fill(b, i)
				if i%3 == 0 {
					if _, err := Isend(c, b, 1, tag).Wait(); err != nil {
						return err
					}
				} else if err := Send(c, b, 1, tag); err != nil {
					return err
				}
			}
			return nil
		}
		got := make([]byte, shmtp.EagerLimit+(64<<10)+1)
		check := func(st Status, err error, i int) error {
			n, tag := sizes(i)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			want := make([]byte, n)
			fill(want, i)
			if st.Count != n || st.Tag != tag || st.Source != 0 || !bytes.Equal(got[:n], want) {
				return fmt.Errorf("message %d (%d bytes, tag %d): status %+v, first word %d", i, n, tag, st, binary.LittleEndian.Uint32(got))
			}
			return nil
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < msgs; i++ {
			if rng.IntN(50) == 0 {
				time.Sleep(time.Millisecond) // let the sender run ahead
			}
			n, tag := sizes(i)
			if i+1 < msgs && n <= shmtp.EagerLimit && rng.IntN(6) == 0 {
				// The next message first, when its tag differs (else it cannot overtake) and
				// the sender did not wait for this one to be taken (a rendezvous would).
				if _, t2 := sizes(i + 1); t2 != tag {
					other := make([]byte, len(got))
					st, err := Recv(c, other, 0, t2)
					copy(got, other)
					if err := check(st, err, i+1); err != nil {
						return fmt.Errorf("received early: %w", err)
					}
					st, err = Recv(c, got, 0, tag)
					if err := check(st, err, i); err != nil {
						return err
					}
					i++
					continue
				}
			}
			var st Status
			var err error
			switch rng.IntN(5) {
			case 0:
				st, err = Irecv(c, got, 0, tag).Wait()
			case 4:
				st, err = Irecv(c, got, 0, AnyTag).Wait()
			case 1:
				st, err = Recv(c, got, 0, AnyTag)
			default:
				st, err = Recv(c, got, 0, tag)
			}
			if err := check(st, err, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShmFastRecvMatching: a blocking Recv from a shared-memory peer comes after the receives
// posted before it (a specific one and an AnySource one) and after the messages already
// queued, as MPI's matching orders them; a message larger than its buffer ends it with a
// truncation error that names the sizes.
func TestShmFastRecvMatching(t *testing.T) {
	err := runNet(2, "shm", func(c *Comm) error {
		if c.Rank() == 0 {
			for _, m := range []struct {
				s   string
				tag int
			}{{"first", 5}, {"second", 5}, {"any1", 6}, {"any2", 6}, {"q1", 7}, {"go", 8}, {"q2", 7}, {"too long", 9}} {
				if err := Send(c, []byte(m.s), 1, m.tag); err != nil {
					return err
				}
			}
			return nil
		}
		a, b := make([]byte, 16), make([]byte, 16)
		expect := func(st Status, err error, buf []byte, want string) error {
			if err != nil || string(buf[:st.Count]) != want {
				return fmt.Errorf("got %q (%+v, %v), want %q", buf[:st.Count], st, err, want)
			}
			return nil
		}
		r := Irecv(c, a, 0, 5)
		st, err := Recv(c, b, 0, 5)
		if err := expect(st, err, b, "second"); err != nil {
			return fmt.Errorf("blocking Recv after an Irecv: %w", err)
		}
		st, err = r.Wait()
		if err := expect(st, err, a, "first"); err != nil {
			return fmt.Errorf("the Irecv posted first: %w", err)
		}
		r = Irecv(c, a, AnySource, 6)
		st, err = Recv(c, b, 0, AnyTag)
		if err := expect(st, err, b, "any2"); err != nil {
			return fmt.Errorf("blocking Recv after an AnySource Irecv: %w", err)
		}
		st, err = r.Wait()
		if err := expect(st, err, a, "any1"); err != nil {
			return err
		}
		st, err = Recv(c, b, 0, 8) // q1 arrives first and waits in the queue
		if err := expect(st, err, b, "go"); err != nil {
			return err
		}
		st, err = Recv(c, b, 0, 7)
		if err := expect(st, err, b, "q1"); err != nil {
			return fmt.Errorf("the queued message first: %w", err)
		}
		st, err = Recv(c, b, 0, 7)
		if err := expect(st, err, b, "q2"); err != nil {
			return err
		}
		var te *TruncateError
		st, err = Recv(c, b[:3], 0, 9)
		if !errors.As(err, &te) || te.Size != 8 || te.Have != 3 || st.Count != 8 || string(b[:3]) != "too" {
			return fmt.Errorf("8 bytes into 3: status %+v, error %v, buffer %q", st, err, b[:3])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShmIsendIrecv: Isend of a small message to a shared-memory peer is complete when it
// returns, and an exchange of Isend, blocking Recv and WaitAll (a halo exchange) allocates
// nothing; an Irecv (by tag or AnyTag) whose message has arrived is complete when it returns,
// with the message's status; a request waited for keeps its result when waited for again.
func TestShmIsendIrecv(t *testing.T) {
	const runs = 2000
	err := runNet(2, "shm", func(c *Comm) error {
		peer := 1 - c.Rank()
		out, in := make([]float64, 64), make([]float64, 64)
		round := func(i int) error {
			out[0], out[63] = float64(i), float64(c.Rank())
			sr := Isend(c, out, peer, 5)
			if done, _, _ := sr.Test(); !done {
				return fmt.Errorf("round %d: a 512-byte Isend is not complete when it returns", i)
			}
			st, err := Recv(c, in, peer, 5)
			if err != nil {
				return err
			}
			if err := WaitAll(sr); err != nil {
				return err
			}
			if st.Count != 512 || in[0] != float64(i) || in[63] != float64(peer) {
				return fmt.Errorf("round %d: status %+v, got %v ... %v", i, st, in[0], in[63])
			}
			return nil
		}
		// Irecv of a message that has arrived: rank 0 sends it and then a second one, which
		// rank 1 takes by blocking Recv first (queueing the first in the engine) in one case,
		// and after a pause without receiving (the first waits in the rings or was drained by
		// the background poller) in the other.
		if c.Rank() == 0 {
			for k := range 2 {
				if err := Send(c, []int32{int32(k), 7, 7}, 1, 1); err != nil {
					return err
				}
				if err := Send(c, []int32{int32(k)}, 1, 2); err != nil {
					return err
				}
			}
		} else {
			b := make([]int32, 4)
			for k := range 2 {
				if k == 0 {
					if _, err := Recv(c, b[:1], 0, 2); err != nil {
						return err
					}
				} else {
					time.Sleep(20 * time.Millisecond)
				}
				tag := 1
				if k == 1 {
					tag = AnyTag // the message on tag 1 is the next one
				}
				r := Irecv(c, b, 0, tag)
				done, st, err := r.Test()
				if !done || err != nil || st != (Status{Source: 0, Tag: 1, Count: 12}) || b[0] != int32(k) || b[2] != 7 {
					return fmt.Errorf("case %d: Irecv of an arrived message: done %v, status %+v, error %v, got %v", k, done, st, err, b)
				}
				if st2, err2 := r.Wait(); st2 != st || err2 != nil {
					return fmt.Errorf("case %d: Wait after Test: %+v, %v", k, st2, err2)
				}
				if k == 1 {
					if _, err := Recv(c, b[:1], 0, 2); err != nil {
						return err
					}
				}
			}
		}
		if testing.Short() || raceEnabled {
			for i := range 50 {
				if err := round(i); err != nil {
					return err
				}
			}
			return nil
		}
		if c.Rank() == 1 {
			for i := range runs + 1 { // AllocsPerRun's warm-up call and its runs
				if err := round(i); err != nil {
					return err
				}
			}
			return nil
		}
		var err error
		i := 0
		allocs := testing.AllocsPerRun(runs, func() {
			if e := round(i); e != nil && err == nil {
				err = e
			}
			i++
		})
		if err != nil {
			return err
		}
		if allocs >= 1 {
			return fmt.Errorf("%v allocations per Isend, Recv and WaitAll, want none", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
