package collectives

import (
	"bytes"
	"testing"
)

// FuzzDecodeHeader feeds arbitrary bytes to the check-header decoder, which reads what peers
// send: it must never panic, must reject short or foreign messages, and what it accepts must
// re-encode to the same bytes.
func FuzzDecodeHeader(f *testing.F) {
	good := make([]byte, hdrLen)
	h := newHeader(3, sig{coll: "allreduce", n: 10, typ: "float64", op: 1}, nil)
	h.encode(good)
	f.Add(good)
	f.Add(good[:hdrLen-1])
	f.Add(append(append([]byte(nil), good...), 1, 2, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := decodeHeader(b)
		if !ok {
			if len(b) >= hdrLen && b[4] == 0x63 && b[5] == 0x6c && b[6] == 0x6f && b[7] == 0x67 {
				t.Fatalf("rejected a header with the magic")
			}
			return
		}
		if len(b) < hdrLen {
			t.Fatalf("accepted %d bytes", len(b))
		}
		out := make([]byte, hdrLen)
		h.encode(out)
		// errRank travels in 64 bits but only its low 32 are meaningful.
		want := append([]byte(nil), b[:hdrLen]...)
		clear(want[12:16])
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip:\n%x\n%x", want, out)
		}
		var m header = newHeader(0, sig{coll: "x"}, nil)
		m.merge(h)
		_ = m.verdict(nil) // any combination must give a value, never panic
	})
}

// FuzzParseSize: the GORUN_COLL_* size parser must never panic nor return a negative size.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8", "16K", "4MiB", "1G", "", "k", "-3", "99999999999999999999", "2kb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}
