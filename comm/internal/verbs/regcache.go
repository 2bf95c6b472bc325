package verbs

import (
	"unsafe"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
)

// RegCache keeps user buffers registered between messages, since registering (pinning pages,
// programming the adapter's translation table) costs far more than a message. An entry holds a
// reference to the registered slice: Go's collector never moves heap objects and cannot free
// (and hand out again) memory that is still referenced, so a cached registration always
// describes live memory of the same buffer. Unused entries beyond the limits are deregistered,
// least recently used first, which drops the reference.
type RegCache struct {
	pd       ibv.PD
	entries  []*RegEntry // most recently used last
	bytes    int
	maxBytes int
	maxCount int
}

// A RegEntry is one registered buffer.
type RegEntry struct {
	buf    []byte
	mr     ibv.MR
	access ibv.Access
	refs   int
}

// NewRegCache makes an empty cache registering in pd.
func NewRegCache(pd ibv.PD) *RegCache {
	return &RegCache{pd: pd, maxBytes: 1 << 30, maxCount: 64}
}

func bufAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// AddrOf is the device address of b, which lies inside the entry's buffer.
func (e *RegEntry) AddrOf(b []byte) uint64 { return e.mr.Addr() + (bufAddr(b) - bufAddr(e.buf)) }

// LKey is the entry's local key.
func (e *RegEntry) LKey() uint32 { return e.mr.LKey() }

// RKey is the entry's remote key.
func (e *RegEntry) RKey() uint32 { return e.mr.RKey() }

func (e *RegEntry) covers(b []byte, access ibv.Access) bool {
	a, base := bufAddr(b), bufAddr(e.buf)
	return e.access&access == access && a >= base && a+uint64(len(b)) <= base+uint64(len(e.buf))
}

// Acquire returns a registration covering b with at least access, registering b if none does.
func (c *RegCache) Acquire(b []byte, access ibv.Access) (*RegEntry, error) {
	for i, e := range c.entries {
		if e.covers(b, access) {
			copy(c.entries[i:], c.entries[i+1:])
			c.entries[len(c.entries)-1] = e
			e.refs++
			return e, nil
		}
	}
	// Registering for both directions lets one entry serve sends and receives of the buffer.
	access |= ibv.AccessLocalWrite | ibv.AccessRemoteWrite
	mr, err := c.pd.RegMR(b, access)
	if err != nil {
		c.evict(0)
		if mr, err = c.pd.RegMR(b, access); err != nil {
			return nil, err
		}
	}
	e := &RegEntry{buf: b, mr: mr, access: access, refs: 1}
	c.entries = append(c.entries, e)
	c.bytes += len(b)
	c.evict(c.maxCount)
	return e, nil
}

// Release ends one use of e (nil is ignored).
func (c *RegCache) Release(e *RegEntry) {
	if e == nil {
		return
	}
	e.refs--
	c.evict(c.maxCount)
}

// evict deregisters unused entries, oldest first, until at most keep remain within maxBytes.
func (c *RegCache) evict(keep int) {
	kept := c.entries[:0]
	over := len(c.entries) - keep
	for _, e := range c.entries {
		if e.refs == 0 && (over > 0 || c.bytes > c.maxBytes) {
			e.mr.Close()
			c.bytes -= len(e.buf)
			over--
			continue
		}
		kept = append(kept, e)
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}

// Close deregisters every entry.
func (c *RegCache) Close() {
	for _, e := range c.entries {
		e.mr.Close()
	}
	c.entries, c.bytes = nil, 0
}
