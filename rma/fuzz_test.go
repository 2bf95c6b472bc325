package rma

import (
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the serving goroutine's request decoder: it must never
// panic, and what it accepts must be safe to carry out on a window of n elements.
func FuzzDecode(f *testing.F) {
	add := func(h header, data int) {
		b := make([]byte, hdrLen+data)
		h.put(b)
		f.Add(b, 10, 8)
	}
	add(header{kind: kindPut, off: 2, n: 3}, 24)
	add(header{kind: kindAcc, op: opSum, off: 0, n: 10}, 80)
	add(header{kind: kindGet, off: 10, n: 0, reply: 99}, 0)
	add(header{kind: kindLock, lock: uint8(Exclusive)}, 0)
	add(header{kind: kindPut, off: 1 << 63, n: 1 << 63}, 0)
	f.Add([]byte{1, 2, 3}, 4, 4)
	f.Fuzz(func(t *testing.T, msg []byte, n, esize int) {
		if n < 0 || n > 1<<20 || esize < 1 || esize > 16 {
			return
		}
		h, data, err := decode(msg, n, esize)
		if err != nil {
			return
		}
		switch h.kind {
		case kindPut, kindAcc, kindGet:
			if h.off+h.n > uint64(n) || h.off > uint64(n) {
				t.Fatalf("accepted [%d, %d+%d) in a window of %d", h.off, h.off, h.n, n)
			}
			if h.kind != kindGet && len(data) != int(h.n)*esize {
				t.Fatalf("accepted %d bytes for %d elements of %d", len(data), h.n, esize)
			}
			if h.kind == kindAcc {
				if _, err := opOf[int64](h.op); err != nil {
					t.Fatalf("accepted op code %d: %v", h.op, err)
				}
			}
		case kindLock:
			if lt := LockType(h.lock); lt != Shared && lt != Exclusive {
				t.Fatalf("accepted lock type %d", h.lock)
			}
		case kindFlush, kindUnlock, kindStop:
		default:
			t.Fatalf("accepted kind %d", h.kind)
		}
	})
}
