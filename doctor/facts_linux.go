package doctor

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func platformFacts(f *Facts) {
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		f.OS = firstField(string(b), "PRETTY_NAME", "=")
	}
	if f.OS == "" {
		f.OS = "Linux"
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		f.CPUModel = firstField(string(b), "model name", ":")
		if f.CPUModel == "" { // arm64 names the implementer and part only
			if impl, part := firstField(string(b), "CPU implementer", ":"), firstField(string(b), "CPU part", ":"); impl != "" {
				f.CPUModel = "implementer " + impl + " part " + part
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f.MemTotal = meminfoBytes(string(b), "MemTotal")
		f.MemAvailable = meminfoBytes(string(b), "MemAvailable")
	}
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
		f.THP = bracketed(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if fs := strings.Fields(string(b)); len(fs) > 0 {
			if v, err := strconv.ParseFloat(fs[0], 64); err == nil {
				f.Load1 = v
			}
		}
	}
	f.NoFile = rlimit(unix.RLIMIT_NOFILE)
	f.MemLock = rlimit(unix.RLIMIT_MEMLOCK)
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

// meminfoBytes reads "Key:   123 kB" from /proc/meminfo.
func meminfoBytes(text, key string) uint64 {
	v := strings.Fields(firstField(text, key, ":"))
	if len(v) == 0 {
		return 0
	}
	n, err := strconv.ParseUint(v[0], 10, 64)
	if err != nil {
		return 0
	}
	if len(v) > 1 && v[1] == "kB" {
		n <<= 10
	}
	return n
}

// bracketed returns the selected word of a sysfs choice list: "always [madvise] never".
func bracketed(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

func ifaceSpeed(name string) int {
	if name == "" {
		return 0
	}
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// tcpCounters reads the host's (network namespace's) TCP counters from /proc/net/snmp.
func tcpCounters() (tcpStats, bool) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return tcpStats{}, false
	}
	return parseSNMP(string(b))
}
