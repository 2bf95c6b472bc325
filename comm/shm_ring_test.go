//go:build linux || darwin

package comm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// testRing builds a ring over ordinary memory (8-byte aligned, as a mapping is).
func testRing(capacity uint64) *ring {
	words := make([]uint64, 16+capacity/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	return &ring{
		head: (*uint64)(unsafe.Pointer(&mem[0])),
		tail: (*uint64)(unsafe.Pointer(&mem[64])),
		data: mem[ringHeader : ringHeader+int(capacity) : ringHeader+int(capacity)],
		cap:  capacity,
	}
}

// TestRingRoundTrip: records of every size up to the largest, written while the consumer
// lags by random amounts, come out whole and in order across many laps of the ring (pad
// records at the wrap included), and a full ring refuses a record instead of overwriting.
// The same holds for a fastbox's format.
func TestRingRoundTrip(t *testing.T) {
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) { ringRoundTrip(t, fast) })
	}
}

func ringRoundTrip(t *testing.T, fast bool) {
	const capacity = 4096
	prod, cons := testRing(capacity), testRing(capacity)
	cons.data, cons.head, cons.tail = prod.data, prod.head, prod.tail // two views of one ring
	prod.fast, cons.fast = fast, fast
	rng := rand.New(rand.NewPCG(1, 2))
	maxPayload := prod.maxRecord() - int(prod.hdrLen())
	var sent, got int
	var pending [][]byte
	for sent < 3000 {
		if rng.IntN(3) > 0 {
			payload := make([]byte, rng.IntN(maxPayload+1))
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			h := wire.Header{Type: wire.Eager, Tag: int32(sent % MaxTag), Ctx: uint64(sent), Length: uint64(len(payload))}
			if prod.tryWrite(&h, payload) {
				pending = append(pending, payload)
				sent++
			} else if len(pending) == 0 {
				t.Fatalf("empty ring refused a %d-byte record", len(payload))
			}
			continue
		}
		for n := rng.IntN(4); n > 0; n-- {
			h, payload, ok, err := cons.peek()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if len(pending) > 0 {
					t.Fatalf("record %d written but not visible", got)
				}
				break
			}
			if h.Ctx != uint64(got) || !bytes.Equal(payload, pending[0]) {
				t.Fatalf("record %d: got ctx %d, %d bytes; want %d bytes", got, h.Ctx, len(payload), len(pending[0]))
			}
			cons.advance(h)
			pending = pending[1:]
			got++
		}
	}
}

// FuzzShmRing: whatever bytes a peer leaves in our ring, the consumer returns records that lie
// within it or an error, never a wild read or a panic.
func FuzzShmRing(f *testing.F) {
	const capacity = 1024
	r := testRing(capacity)
	for i, n := range []int{0, 8, 100, r.maxRecord() - recordHeader, 1, 300, 64} {
		r.tryWrite(&wire.Header{Type: wire.Eager, Tag: int32(i), Ctx: worldCtx, Length: uint64(n)}, make([]byte, n))
	}
	r.tryWrite(&wire.Header{Type: wire.Fin, ID: 3}, nil)
	r.tryWrite(&wire.Header{Type: wire.RTS, Tag: 1, Length: shmEagerLimit + 1, ID: 4}, nil)
	f.Add(append([]byte(nil), r.data...), uint64(0))
	f.Add(append([]byte(nil), r.data...), uint64(576))
	f.Fuzz(func(t *testing.T, data []byte, head uint64) {
		for _, fast := range []bool{false, true} { // the same bytes read as a fastbox
			r := testRing(capacity)
			r.fast = fast
			copy(r.data, data)
			r.consHead = head &^ (recordAlign - 1)
			for i := 0; i < 64; i++ {
				h, payload, ok, err := r.peek()
				if err != nil || !ok {
					break
				}
				idx := r.consHead % capacity
				if uint64(len(payload)) != recordPayload(h) || idx+r.hdrLen()+uint64(len(payload)) > capacity {
					t.Fatalf("record at %d of %d bytes outside the ring (fastbox %v)", idx, len(payload), fast)
				}
				if fast && h.Type != wire.Eager {
					t.Fatalf("fastbox record of type %d", h.Type)
				}
				if binary.LittleEndian.Uint64(r.data[idx:]) != r.consHead+1 {
					t.Fatal("record returned without its stamp")
				}
				r.advance(h)
			}
		}
	})
}

// TestShmPingPongAllocs: a blocking Send and Recv of a small message over shared memory
// allocate nothing (shm_fast.go), in the steady state of a ping-pong and across truncated and
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
// message waited for it, also when the sender cannot write into the receiver (it asks the
// receiver to read its part); and a truncating receive still gets its error.
func TestShmSplitCopy(t *testing.T) {
	sizes := []int{shmEagerLimit + 1, shmSplitMin - 1, shmSplitMin, shmSplitMin + 4097, 3<<20 + 123}
	for _, writeFails := range []bool{false, true} {
		if writeFails {
			shmCMAWrite = func(int, uint64, []byte) error { return errors.New("refused (test)") }
		}
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
		shmCMAWrite = cmaWrite
		if err != nil {
			t.Fatalf("sender's write fails: %v: %v", writeFails, err)
		}
	}
}
