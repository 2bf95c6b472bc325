//go:build linux || darwin

package shm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gorun-hpc/gorun/comm/internal/wire"
)

// testRing builds a ring over ordinary memory (8-byte aligned, as a mapping is).
func testRing(capacity uint64) *Ring {
	words := make([]uint64, 16+capacity/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	return &Ring{
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
	maxPayload := prod.MaxRecord() - int(prod.hdrLen())
	var sent, got int
	var pending [][]byte
	for sent < 3000 {
		if rng.IntN(3) > 0 {
			payload := make([]byte, rng.IntN(maxPayload+1))
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			h := wire.Header{Type: wire.Eager, Tag: int32(sent % wire.MaxTag), Ctx: uint64(sent), Length: uint64(len(payload))}
			if prod.TryWrite(&h, payload) {
				pending = append(pending, payload)
				sent++
			} else if len(pending) == 0 {
				t.Fatalf("empty ring refused a %d-byte record", len(payload))
			}
			continue
		}
		for n := rng.IntN(4); n > 0; n-- {
			h, payload, ok, err := cons.Peek()
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
			cons.Advance(h)
			pending = pending[1:]
			got++
		}
	}
}

// FuzzRing: whatever bytes a peer leaves in our ring, the consumer returns records that lie
// within it or an error, never a wild read or a panic.
func FuzzRing(f *testing.F) {
	const capacity = 1024
	r := testRing(capacity)
	for i, n := range []int{0, 8, 100, r.MaxRecord() - RecordHeader, 1, 300, 64} {
		r.TryWrite(&wire.Header{Type: wire.Eager, Tag: int32(i), Ctx: 2, Length: uint64(n)}, make([]byte, n))
	}
	r.TryWrite(&wire.Header{Type: wire.Fin, ID: 3}, nil)
	r.TryWrite(&wire.Header{Type: wire.RTS, Tag: 1, Length: EagerLimit + 1, ID: 4}, nil)
	f.Add(append([]byte(nil), r.data...), uint64(0))
	f.Add(append([]byte(nil), r.data...), uint64(576))
	f.Fuzz(func(t *testing.T, data []byte, head uint64) {
		for _, fast := range []bool{false, true} { // the same bytes read as a fastbox
			r := testRing(capacity)
			r.fast = fast
			copy(r.data, data)
			r.consHead = head &^ (recordAlign - 1)
			for i := 0; i < 64; i++ {
				h, payload, ok, err := r.Peek()
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
				r.Advance(h)
			}
		}
	})
}
