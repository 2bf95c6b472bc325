//go:build linux

package hpl

import (
	"testing"
	"testing/fstest"
)

// The memory available is the least of MemAvailable and what each limited cgroup level
// (v1 and v2, the process's own and those above it) leaves, its inactive file cache
// counting as free.
func TestLinuxAvailable(t *testing.T) {
	const gib = 1 << 30
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	meminfo := file("MemTotal:       32000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n")
	v2mounts := file("30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n" +
		"31 22 0:5 / /proc rw - proc proc rw\n")
	v1mounts := file("30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n" +
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"35 30 0:32 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
	cases := []struct {
		name  string
		fs    fstest.MapFS
		want  uint64
		known bool
	}{
		{"meminfo only", fstest.MapFS{"proc/meminfo": meminfo}, 20000000 * 1024, true},
		{"old kernel: MemFree", fstest.MapFS{"proc/meminfo": file("MemFree: 1000 kB\n")}, 1000 * 1024, true},
		{"nothing", fstest.MapFS{}, 0, false},
		{"v2 unlimited", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v2mounts, "proc/self/cgroup": file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("max\n"), "sys/fs/cgroup/job/memory.current": file("1000\n"),
		}, 20000000 * 1024, true},
		{"v2 own limit, inactive cache free", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v2mounts, "proc/self/cgroup": file("0::/a/job\n"),
			"sys/fs/cgroup/a/job/memory.max":     file("4294967296\n"),
			"sys/fs/cgroup/a/job/memory.current": file("1073741824\n"),
			"sys/fs/cgroup/a/job/memory.stat":    file("anon 1\nfile 536870912\ninactive_file 536870912\n"),
			"sys/fs/cgroup/a/memory.max":         file("max\n"),
		}, 4*gib - gib/2, true},
		{"v2 parent tighter", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v2mounts, "proc/self/cgroup": file("0::/a/job\n"),
			"sys/fs/cgroup/a/job/memory.max": file("8589934592\n"), "sys/fs/cgroup/a/job/memory.current": file("0\n"),
			"sys/fs/cgroup/a/memory.max": file("3221225472\n"), "sys/fs/cgroup/a/memory.current": file("2147483648\n"),
		}, gib, true},
		{"v2 over the limit", fstest.MapFS{
			"proc/self/mountinfo": v2mounts, "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("100\n"), "sys/fs/cgroup/memory.current": file("200\n"),
		}, 0, true},
		{"v2 namespace: the path is outside the mount", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v2mounts, "proc/self/cgroup": file("0::/../../elsewhere\n"),
			"sys/fs/cgroup/memory.max": file("2147483648\n"), "sys/fs/cgroup/memory.current": file("0\n"),
		}, 2 * gib, true},
		{"v1 limited", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v1mounts,
			"proc/self/cgroup": file("5:cpu,cpuacct:/x\n4:memory:/slurm/job1\n0::/\n"),
			"sys/fs/cgroup/memory/slurm/job1/memory.limit_in_bytes": file("2147483648\n"),
			"sys/fs/cgroup/memory/slurm/job1/memory.usage_in_bytes": file("1610612736\n"),
			"sys/fs/cgroup/memory/slurm/job1/memory.stat":           file("cache 1\ninactive_file 9\ntotal_inactive_file 536870912\n"),
			"sys/fs/cgroup/memory/slurm/memory.limit_in_bytes":      file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            file("9223372036854771712\n"),
		}, gib, true},
		{"v1 unlimited", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/mountinfo": v1mounts, "proc/self/cgroup": file("4:memory:/p/q\n"),
			"sys/fs/cgroup/memory/p/q/memory.limit_in_bytes": file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/p/q/memory.usage_in_bytes": file("6049792\n"),
		}, 20000000 * 1024, true},
	}
	for _, tc := range cases {
		got, known := linuxAvailable(tc.fs)
		if got != tc.want || known != tc.known {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
	// This machine: known, and positive.
	if v, ok := osAvailableMemory(); !ok || v == 0 {
		t.Fatalf("osAvailableMemory() = %d, %v", v, ok)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/a\040b\134c`); got != `/mnt/a b\c` {
		t.Fatalf("%q", got)
	}
}
