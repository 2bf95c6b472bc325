package shm

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"
)

// macOS has no cross-memory attach: large messages stream through the ring.
func CMARead(pid int, addr uint64, dst []byte) error {
	return errors.New("no cross-memory attach on macOS")
}

func CMAWrite(pid int, addr uint64, src []byte) error {
	return errors.New("no cross-memory attach on macOS")
}

func AllowCMA() {}

// FutexWait has no cross-process futex to use here: it naps in short steps until the word
// changes or the timeout passes.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for atomic.LoadUint32(addr) == val && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

func FutexWake(addr *uint32) {}

func Yield() { runtime.Gosched() }

// mapPopulate: macOS has no MAP_POPULATE; its segments fault in lazily.
const mapPopulate = 0
