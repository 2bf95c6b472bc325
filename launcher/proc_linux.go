//go:build linux

package launcher

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a rank in its own process group, so one signal reaches the rank and every
// process it started, and asks the kernel to kill the rank if gorun itself dies (kill -9),
// so no rank outlives its launcher.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until process pid has exited but leaves it unreaped (a zombie). While the
// zombie exists its pid, which is also its process group id, cannot be reused, so gorun can
// still signal the group safely.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// canWaitUnreaped tells whether waitExited really waits without reaping.
const canWaitUnreaped = true
