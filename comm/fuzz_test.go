package comm

import (
	"bytes"
	"testing"
)

// FuzzParseHeader: any 40 bytes either fail validation or decode to a header that re-encodes
// to the same bytes and stays within the limits the reader relies on.
func FuzzParseHeader(f *testing.F) {
	for _, h := range []header{
		{typ: frameEager, tag: 5, ctx: worldCtx, length: 100},
		{typ: frameRTS, tag: 1, ctx: 3, length: eagerLimit + 1, id: 9},
		{typ: frameCTS, flags: flagDiscard, id: 4},
		{typ: frameData, length: 10, id: 2, offset: 20},
		{typ: framePing}, {typ: frameBye},
	} {
		b := make([]byte, headerSize)
		h.put(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, headerSize)
		h.put(out)
		if !bytes.Equal(out, b) {
			t.Fatalf("header %+v re-encodes differently", h)
		}
		switch h.typ {
		case frameEager:
			if h.length > eagerLimit {
				t.Fatal("eager frame over the limit accepted")
			}
		case frameData:
			if h.length > dataChunk {
				t.Fatal("data frame over the chunk size accepted")
			}
		case frameRTS:
			if h.length > maxMessage {
				t.Fatal("message over the limit accepted")
			}
		}
		if (h.typ == frameEager || h.typ == frameRTS) && (h.tag < 0 || h.tag >= MaxTag) {
			t.Fatal("tag out of range accepted")
		}
	})
}
