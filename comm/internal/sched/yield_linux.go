package sched

import "golang.org/x/sys/unix"

// Yield gives the core to another thread of the machine: on an oversubscribed host the peer
// a waiter polls for may be waiting for this very core. It is a raw call: through the runtime's
// syscall path, a yield that lasts the other task's whole turn lets sysmon take the processor
// away, and getting it back costs more than the yield.
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
