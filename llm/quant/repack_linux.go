package quant

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readOnlyMapping reports whether b lies in a mapping this process cannot write (a GGUF file
// mapped PROT_READ), from /proc/self/maps; true when that cannot be read, since copying is
// always safe.
func readOnlyMapping(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return true
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "start-end perms offset dev inode path"
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || addr < start || addr >= end {
			continue
		}
		return len(fields[1]) < 2 || fields[1][1] != 'w'
	}
	return true
}

// releaseMapped drops this process's pages of the whole pages inside b, a range of a file
// mapping that nothing reads any more (the file's pages stay in the page cache).
func releaseMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + ps - 1) &^ (ps - 1)
	hi := (start + uintptr(len(b))) &^ (ps - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED) // advice: a failure only costs memory
}
