//go:build unix && !linux

package launcher

import "syscall"

// sysProcAttr puts a rank in its own process group, so one signal reaches the rank and every
// process it started. (Only Linux can also tie the rank's life to gorun's.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited has no unreaped wait here (x/sys offers waitid on Linux only); the caller reaps
// with Wait and signals the group right after, a window in which the group id could in
// theory be reused.
func waitExited(pid int) error { return nil }

const canWaitUnreaped = false
