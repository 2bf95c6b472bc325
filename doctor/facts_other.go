//go:build !linux

package doctor

import (
	"strings"

	"golang.org/x/sys/unix"
)

func platformFacts(f *Facts) {
	f.OS = "macOS"
	if v, err := unix.Sysctl("kern.osproductversion"); err == nil {
		f.OS += " " + v
	}
	f.Kernel, _ = unix.Sysctl("kern.osrelease")
	f.CPUModel, _ = unix.Sysctl("machdep.cpu.brand_string")
	if v, err := unix.SysctlUint64("hw.memsize"); err == nil {
		f.MemTotal = v
	}
	f.NoFile = rlimit(unix.RLIMIT_NOFILE)
	f.MemLock = rlimit(unix.RLIMIT_MEMLOCK)
	f.CPUModel = strings.TrimSpace(f.CPUModel)
}

func rlimit(which int) Limit {
	var r unix.Rlimit
	if unix.Getrlimit(which, &r) != nil {
		return Limit{Soft: -2, Hard: -2}
	}
	conv := func(v uint64) int64 {
		if v == unix.RLIM_INFINITY || v > 1<<62 {
			return -1
		}
		return int64(v)
	}
	return Limit{Soft: conv(r.Cur), Hard: conv(r.Max)}
}

func ifaceSpeed(string) int { return 0 }

// tcpCounters: macOS keeps them behind sysctl net.inet.tcp.stats, a struct this does not read.
func tcpCounters() (tcpStats, bool) { return tcpStats{}, false }
