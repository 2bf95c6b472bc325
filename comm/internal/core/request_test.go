package core

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestCompleteWakesWaiter races Complete against a waiter that blocks on Done, released
// together round after round: every request must wake its waiter. Complete stores the state
// and then reads whether a channel exists; Done stores that it exists and then reads the
// state. If either load could pass the store before it, both would miss the other and the
// waiter would sleep forever (qemu-user's arm64 emulation on x86 hosts lets a load pass an
// earlier atomic store, so this test runs under it in CI).
func TestCompleteWakesWaiter(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors to race")
	}
	const rounds = 30000 // the old handshake failed within a few thousand under qemu
	reqs := make([]*Request, rounds)
	for i := range reqs {
		reqs[i] = NewRequest()
	}
	var round atomic.Int64 // both sides start round i once it reaches i
	var ready atomic.Int64 // the completer's count of rounds it has reached
	go func() {
		for i := range rounds {
			ready.Store(int64(i + 1))
			for round.Load() <= int64(i) {
			}
			reqs[i].Complete(Status{Tag: i}, nil)
		}
	}()
	// Bounded in time too: on a machine busy with other tests the two spinning goroutines take
	// turns on a core and rounds slow down (the rounds are for qemu, where they take 0.3 s).
	deadline := time.Now().Add(10 * time.Second)
	defer round.Store(math.MaxInt64) // lets the completer run through the rest
	for i := range rounds {
		if i%256 == 0 && time.Now().After(deadline) {
			t.Logf("%d rounds in the time allowed", i)
			return
		}
		for ready.Load() <= int64(i) {
		}
		round.Store(int64(i + 1))
		r := reqs[i]
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d of %d: the waiter was never woken (Finished=%v)", i, rounds, r.Finished())
		}
		if st, _ := r.Wait(); st.Tag != i {
			t.Fatalf("round %d: status %+v, want tag %d", i, st, i)
		}
	}
}
