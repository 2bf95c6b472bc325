package shm

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CMARead copies len(dst) bytes at addr in process pid into dst (Linux cross-memory attach: one
// copy, no intermediate buffer).
func CMARead(pid int, addr uint64, dst []byte) error {
	for len(dst) > 0 {
		local := []unix.Iovec{{Base: &dst[0]}}
		local[0].SetLen(len(dst))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(dst)}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != nil {
			return err
		}
		if n <= 0 {
			return unix.EIO
		}
		dst = dst[n:]
		addr += uint64(n)
	}
	return nil
}

// CMAWrite copies src into process pid's memory at addr (the other direction of CMARead).
func CMAWrite(pid int, addr uint64, src []byte) error {
	for len(src) > 0 {
		local := []unix.Iovec{{Base: &src[0]}}
		local[0].SetLen(len(src))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(src)}}
		n, err := unix.ProcessVMWritev(pid, local, remote, 0)
		if err != nil {
			return err
		}
		if n <= 0 {
			return unix.EIO
		}
		src = src[n:]
		addr += uint64(n)
	}
	return nil
}

// AllowCMA lets sibling ranks read this process's memory where the Yama LSM would otherwise
// restrict ptrace-class access to descendants (ptrace_scope=1).
func AllowCMA() { unix.Prctl(unix.PR_SET_PTRACER, ^uintptr(0), 0, 0, 0) }

const (
	futexWaitOp = 0 // FUTEX_WAIT, not the private variant: the word is shared between processes
	futexWakeOp = 1
)

// FutexWait sleeps while *addr is val, at most timeout (a futex shared between processes).
func FutexWait(addr *uint32, val uint32, timeout time.Duration) {
	ts := unix.NsecToTimespec(timeout.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// FutexWake wakes every thread sleeping in FutexWait on addr.
func FutexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1<<30, 0, 0, 0)
}

// mapPopulate allocates and maps a segment's pages when it is mapped (see segPopulateMax).
const mapPopulate = unix.MAP_POPULATE
