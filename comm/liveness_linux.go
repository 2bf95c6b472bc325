package comm

import (
	"bytes"
	"os"
	"strconv"
)

// readProcState reads /proc/PID/stat; false when the process does not exist (or /proc does not
// tell).
func readProcState(pid int) (procState, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procState{}, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procState{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procState{}, false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procState{}, false
	}
	return procState{state: f[0][0], start: start}, true
}
