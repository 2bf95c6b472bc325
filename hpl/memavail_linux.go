//go:build linux

package hpl

import (
	"bufio"
	"bytes"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

func osAvailableMemory() (uint64, bool) { return linuxAvailable(os.DirFS("/")) }

// linuxAvailable is the smaller of the machine's MemAvailable and what the memory cgroups
// this process is in (v2 memory.max, v1 memory.limit_in_bytes, on its own level and the
// levels above it) leave: their limit minus their usage, the usage without the inactive file
// cache, which the kernel reclaims before it runs out. fsys is the root file system.
func linuxAvailable(fsys fs.FS) (uint64, bool) {
	best, known := uint64(math.MaxUint64), false
	if v, ok := memInfoAvailable(fsys); ok {
		best, known = v, true
	}
	if v, ok := cgroupAvailable(fsys); ok && v < best {
		best, known = v, true
	}
	if !known {
		return 0, false
	}
	return best, true
}

// memInfoAvailable reads MemAvailable from /proc/meminfo (MemFree on kernels before 3.14,
// which lack it).
func memInfoAvailable(fsys fs.FS) (uint64, bool) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	var free uint64
	haveFree := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || v > math.MaxUint64/1024 {
			continue
		}
		if len(f) > 2 && f[2] == "kB" {
			v *= 1024
		}
		switch f[0] {
		case "MemAvailable:":
			return v, true
		case "MemFree:":
			free, haveFree = v, true
		}
	}
	return free, haveFree
}

// cgroupVersion names the files of a memory cgroup: its limit, its usage, and the memory.stat
// key of its inactive file cache (hierarchical in v1).
type cgroupVersion struct {
	limit, usage, inactive string
}

var (
	cgroupV2 = cgroupVersion{"memory.max", "memory.current", "inactive_file"}
	cgroupV1 = cgroupVersion{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}
)

// cgroupAvailable is the least that any memory cgroup of this process leaves, false when
// none has a limit.
func cgroupAvailable(fsys fs.FS) (uint64, bool) {
	own, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	mounts, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return 0, false
	}
	// "hierarchy-ID:controllers:path": v2 is "0::path", v1's memory controller is named.
	var v2Path, v1Path string
	for line := range strings.Lines(string(own)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2Path = f[2]
		case hasWord(f[1], ",", "memory"):
			v1Path = f[2]
		}
	}
	best, known := uint64(math.MaxUint64), false
	// mountinfo: "id parent major:minor root mountpoint options [optional...] - fstype source
	// superoptions".
	for line := range strings.Lines(string(mounts)) {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, point := unescapeMount(f[3]), unescapeMount(f[4])
		var v cgroupVersion
		var p string
		switch {
		case g[0] == "cgroup2" && v2Path != "":
			v, p = cgroupV2, v2Path
		case g[0] == "cgroup" && v1Path != "" && hasWord(g[2], ",", "memory"):
			v, p = cgroupV1, v1Path
		default:
			continue
		}
		if a, ok := cgroupTree(fsys, point, root, p, v); ok && a < best {
			best, known = a, true
		}
	}
	return best, known
}

// cgroupTree walks from the cgroup at path (seen from the mount's root) up to the mount
// point, and returns the least that a level with a limit leaves. A path outside the mount
// (a cgroup namespace shows the process's own cgroup as the mount's root) starts at the mount
// point.
func cgroupTree(fsys fs.FS, point, root, p string, v cgroupVersion) (uint64, bool) {
	top := strings.TrimPrefix(path.Clean(point), "/")
	dir := top
	if rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(root)); ok {
		if d := strings.TrimPrefix(path.Join(top, rel), "/"); isDir(fsys, d) {
			dir = d
		}
	}
	best, known := uint64(math.MaxUint64), false
	for {
		if a, ok := cgroupLeft(fsys, dir, v); ok && a < best {
			best, known = a, true
		}
		if dir == top || dir == "." || dir == "" {
			return best, known
		}
		dir = path.Dir(dir)
	}
}

// cgroupLeft is limit - (usage - inactive file cache) of one cgroup, false without a limit.
// v1 writes "no limit" as a large number (PAGE_COUNTER_MAX pages), v2 as "max".
func cgroupLeft(fsys fs.FS, dir string, v cgroupVersion) (uint64, bool) {
	limit, ok := readUint(fsys, path.Join(dir, v.limit))
	if !ok || limit >= 1<<62 {
		return 0, false
	}
	usage, ok := readUint(fsys, path.Join(dir, v.usage))
	if !ok {
		return limit, true
	}
	if inactive, ok := statValue(fsys, path.Join(dir, "memory.stat"), v.inactive); ok && inactive <= usage {
		usage -= inactive
	}
	if usage >= limit {
		return 0, true
	}
	return limit - usage, true
}

func readUint(fsys fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return v, err == nil
}

// statValue reads one "key value" line of a memory.stat file.
func statValue(fsys fs.FS, name, key string) (uint64, bool) {
	fh, err := fsys.Open(name)
	if err != nil {
		return 0, false
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

func isDir(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.IsDir()
}

func hasWord(list, sep, w string) bool {
	for x := range strings.SplitSeq(list, sep) {
		if x == w {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
