package tcp

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The links' sockets are non-blocking, so reads and writes on them never sleep: they are made
// as raw system calls, without telling the scheduler. Through the runtime's syscall path, a
// polling waiter's stream of calls now and then loses its processor to sysmon's hand-off and
// waits for a thread wake-up, which stretches the tail of small-message latency. Large calls
// are raw too: one copies at most what the socket holds or has room for (a DATA frame, a
// few MiB), and through the syscall path sysmon takes the processor from nearly every one
// of them, which keeps the monitor thread at its shortest sleep and hands processors between
// threads: CPU time that the ranks of an oversubscribed host need.
// The cost: a stop-the-world (rare: the transport allocates little) waits for the call.

// Read reads from the non-blocking socket fd into b.
func Read(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Writev writes a then b (b may be empty) in one call.
func Writev(fd int, a, b []byte) (int, error) {
	var iov [2]unix.Iovec
	n := 0
	for _, s := range [2][]byte{a, b} {
		if len(s) > 0 {
			iov[n].Base = &s[0]
			iov[n].SetLen(len(s))
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	w, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if e != 0 {
		return 0, e
	}
	return int(w), nil
}

// sendBufferWant is the send buffer a link asks for: a large message's chunk then goes into the
// socket in a few writes, and the sender waits for room (a poll, a wake-up) less often.
const sendBufferWant = 4 << 20

// sendBuffer is the SO_SNDBUF a link sets, or 0 to leave the kernel's autotuning alone: a fixed
// size switches autotuning off, so it is set only where the kernel grants all of it
// (net.core.wmem_max) and autotuning would stop below what it gives (the kernel doubles the
// value; net.ipv4.tcp_wmem's maximum bounds autotuning).
func sendBuffer() int {
	sendBufferOnce.Do(func() {
		sendBufferSize = chooseSendBuffer(readSysctl("/proc/sys/net/core/wmem_max"), readSysctl("/proc/sys/net/ipv4/tcp_wmem"))
	})
	return sendBufferSize
}

var (
	sendBufferOnce sync.Once
	sendBufferSize int
)

// chooseSendBuffer decides sendBuffer from the two settings' text (empty where unreadable).
func chooseSendBuffer(wmemMax, tcpWmem string) int {
	limit, err := strconv.Atoi(strings.TrimSpace(wmemMax))
	if err != nil || limit < sendBufferWant {
		return 0
	}
	f := strings.Fields(tcpWmem)
	if len(f) != 3 {
		return 0
	}
	auto, err := strconv.Atoi(f[2])
	if err != nil || auto >= 2*sendBufferWant {
		return 0
	}
	return sendBufferWant
}

func readSysctl(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
