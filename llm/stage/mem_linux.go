package stage

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
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

// cgroupLeft reads the memory limit of this process's cgroup, less its usage: v2 (the
// "0::" line; memory.max, memory.current) or v1 (the "memory" controller;
// memory.limit_in_bytes, memory.usage_in_bytes). A mount point that is not the usual one is not
// looked for.
func cgroupLeft() (int64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			if v, ok := left(filepath.Join("/sys/fs/cgroup", f[2]), "memory.max", "memory.current"); ok {
				return v, true
			}
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			if v, ok := left(filepath.Join("/sys/fs/cgroup/memory", f[2]), "memory.limit_in_bytes", "memory.usage_in_bytes"); ok {
				return v, true
			}
		}
	}
	return 0, false
}

func left(dir, limit, usage string) (int64, bool) {
	lim, err1 := os.ReadFile(filepath.Join(dir, limit))
	cur, err2 := os.ReadFile(filepath.Join(dir, usage))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	m, err1 := strconv.ParseInt(strings.TrimSpace(string(lim)), 10, 64) // "max": no limit
	c, err2 := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
	if err1 != nil || err2 != nil || m >= 1<<62 { // v1 writes "no limit" as a huge number
		return 0, false
	}
	return max(m-c, 0), true
}
