//go:build unix && !linux

package launcher

import "os"

// exitOrder reports ranks' exits, in the order they happened, on its notices channel.
type exitOrder interface {
	// watch starts watching a rank and the read ends of its output pipes; false means it
	// cannot, and the rank's waiter reports the exit instead.
	watch(rank, pid int, outputs []*os.File) bool
	stop()
}

// noOrder leaves the order to the waiters, which report each exit when they see it.
type noOrder struct{}

func (noOrder) watch(int, int, []*os.File) bool { return false }
func (noOrder) stop()                           {}

func newExitOrder(chan<- int) exitOrder { return noOrder{} }
