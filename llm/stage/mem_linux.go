package stage

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// UsableMemory returns the memory this process can still have, in bytes: the machine's
// MemAvailable, less where the process's cgroup (v2 memory.max less memory.current) leaves
// less. ok is false when neither is known.
func UsableMemory() (n int64, ok bool) {
	if v, found := meminfo("/proc/meminfo", "MemAvailable:"); found {
		n, ok = v, true
	}
	if v, found := cgroupLeft(); found && (!ok || v < n) {
		n, ok = v, true
	}
	return n, ok
}

func meminfo(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == key {
			v, err := strconv.ParseInt(fs[1], 10, 64)
			return v << 10, err == nil
		}
	}
	return 0, false
}

// cgroupLeft reads the cgroup v2 limit of this process (the unified hierarchy's "0::" line).
func cgroupLeft() (int64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "0::") {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(line, "0::"))
		lim, err1 := os.ReadFile(filepath.Join(dir, "memory.max"))
		cur, err2 := os.ReadFile(filepath.Join(dir, "memory.current"))
		if err1 != nil || err2 != nil {
			return 0, false
		}
		m, err1 := strconv.ParseInt(strings.TrimSpace(string(lim)), 10, 64) // "max": no limit
		c, err2 := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return max(m-c, 0), true
	}
	return 0, false
}
