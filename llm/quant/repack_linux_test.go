package quant

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"golang.org/x/sys/unix"
)

// mappingRSS returns the resident kilobytes /proc/self/smaps gives for the mapping that starts
// at addr.
func mappingRSS(t *testing.T, addr uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	head := fmt.Sprintf("%x-", addr)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(strings.Fields(line)[0], "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = strings.HasPrefix(line, head)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", addr)
	return 0
}

// Rows in a read-only file mapping (how the loader passes them at TP=1) are interleaved into
// a private buffer and the mapped pages leave this process: no row is resident twice.
func TestRepackReleasesMapping(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rows, cols := 256, 1024 // Q4_0: 147456 bytes, 36 pages
	data := randBlocks(r, gguf.Q4_0, rows*cols)
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	mapped, err := unix.Mmap(int(fh.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mapped)
	if !readOnlyMapping(mapped) || readOnlyMapping(make([]byte, 10)) {
		t.Fatal("readOnlyMapping: wrong for the file mapping or a heap slice")
	}
	for i := 0; i < len(mapped); i += 4096 {
		touchSink += mapped[i]
	}
	addr := uintptr(unsafe.Pointer(&mapped[0]))
	if kb := mappingRSS(t, addr); kb < len(data)/1024 {
		t.Fatalf("touched mapping has %d KiB resident, want %d", kb, len(data)/1024)
	}
	m, err := NewMatrix(gguf.Q4_0, rows, cols, mapped)
	if err != nil {
		t.Fatal(err)
	}
	m.repackGroups(8)
	if m.Interleaved() != 8 || unsafe.SliceData(m.Data) == unsafe.SliceData(mapped) {
		t.Fatal("rows in a read-only mapping were not moved to a private buffer")
	}
	if kb := mappingRSS(t, addr); kb != 0 {
		t.Fatalf("after interleaving, %d KiB of the mapping are still resident", kb)
	}
	for i := 0; i < rows; i++ {
		if !bytes.Equal(m.Row(i), data[i*m.RowBytes:(i+1)*m.RowBytes]) {
			t.Fatalf("row %d reads back differently", i)
		}
	}
}

// touchSink keeps the page-touching reads from being optimized away.
var touchSink byte
