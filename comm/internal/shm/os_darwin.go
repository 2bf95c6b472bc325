package shm

import (
	"errors"
	"sync/atomic"
	"time"
)

// CMARead fails: macOS has no cross-memory attach, so large messages stream through the ring.
func CMARead(pid int, addr uint64, dst []byte) error {
	return errors.New("no cross-memory attach on macOS")
}

// CMAWrite fails: see CMARead.
func CMAWrite(pid int, addr uint64, src []byte) error {
	return errors.New("no cross-memory attach on macOS")
}

// AllowCMA does nothing on macOS.
func AllowCMA() {}

// FutexWait has no cross-process futex to use here: it naps in short steps until the word
// changes or the timeout passes.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for atomic.LoadUint32(addr) == val && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

// FutexWake does nothing: FutexWait polls the word.
func FutexWake(addr *uint32) {}

// mapPopulate: macOS has no MAP_POPULATE; its segments fault in lazily.
const mapPopulate = 0
