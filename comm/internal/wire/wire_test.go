package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// The TCP transport's limits (comm's eagerLimit and dataChunk), which the seed corpus was
// written against.
const (
	testEager = 64 << 10
	testData  = 4 << 20
	testCtx   = uint64(0x676f72756e000000)
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Type: Eager, Tag: 5, Ctx: testCtx, Length: 100},
		{Type: Eager, Tag: 7, Length: testEager},
		{Type: RTS, Tag: MaxTag - 1, Ctx: 3, Length: testEager + 1, ID: 9},
		{Type: RTS, Length: MaxMessage, ID: 1},
		{Type: CTS, Flags: FlagDiscard, ID: 4, Offset: 8},
		{Type: Data, Length: testData, ID: 2, Offset: 1 << 30},
		{Type: Ping}, {Type: Bye},
	} {
		b := make([]byte, HeaderSize)
		h.Put(b)
		got, err := Parse(b, testEager, testData)
		require.NoError(t, err)
		require.Equal(t, h, got)
	}
}

// TestHeaderLayout pins the encoding byte by byte, so that a change of field order or width
// shows here and not as a failed job between two builds.
func TestHeaderLayout(t *testing.T) {
	b := make([]byte, HeaderSize)
	(&Header{Type: RTS, Flags: 0, Tag: 0x01020304, Ctx: 0x1112131415161718, Length: 0x2122232425262728,
		ID: 0x3132333435363738, Offset: 0x4142434445464748}).Put(b)
	want := []byte{2, 0, 0, 0, 4, 3, 2, 1,
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,
		0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31,
		0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41}
	require.Equal(t, want, b)
}

func TestHeaderRejects(t *testing.T) {
	for name, h := range map[string]Header{
		"eager over the limit": {Type: Eager, Length: testEager + 1},
		"eager with flags":     {Type: Eager, Flags: 1},
		"rts too small":        {Type: RTS, Length: 10},
		"rts over 1 TiB":       {Type: RTS, Length: MaxMessage + 1},
		"negative tag":         {Type: Eager, Tag: -1},
		"tag at MaxTag":        {Type: RTS, Tag: MaxTag, Length: testEager + 1},
		"cts with payload":     {Type: CTS, Length: 1},
		"cts unknown flag":     {Type: CTS, Flags: 2},
		"data too long":        {Type: Data, Length: testData + 1},
		"data offset too far":  {Type: Data, Length: 1, Offset: MaxMessage + 1},
		"empty data":           {Type: Data},
		"ping with payload":    {Type: Ping, Length: 1},
		"bye with flags":       {Type: Bye, Flags: 1},
		"unknown type":         {Type: 99},
		"shm-only type":        {Type: Split, Length: 1},
	} {
		b := make([]byte, HeaderSize)
		h.Put(b)
		_, err := Parse(b, testEager, testData)
		require.Error(t, err, name)
	}
	b := make([]byte, HeaderSize)
	(&Header{Type: Ping}).Put(b)
	b[2] = 1
	_, err := Parse(b, testEager, testData)
	require.ErrorContains(t, err, "reserved")
	_, err = Parse(make([]byte, 10), testEager, testData)
	require.ErrorContains(t, err, "10 bytes")
	// Limits are the caller's: an eager frame the TCP limits refuse passes larger ones.
	(&Header{Type: Eager, Length: testEager + 1}).Put(b)
	_, err = Parse(b, testEager+1, testData)
	require.NoError(t, err)
}

// FuzzParseHeader: any 40 bytes either fail validation or decode to a header that re-encodes
// to the same bytes and stays within the limits the reader relies on.
func FuzzParseHeader(f *testing.F) {
	for _, h := range []Header{
		{Type: Eager, Tag: 5, Ctx: testCtx, Length: 100},
		{Type: RTS, Tag: 1, Ctx: 3, Length: testEager + 1, ID: 9},
		{Type: CTS, Flags: FlagDiscard, ID: 4},
		{Type: Data, Length: 10, ID: 2, Offset: 20},
		{Type: Ping}, {Type: Bye},
	} {
		b := make([]byte, HeaderSize)
		h.Put(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b, testEager, testData)
		if err != nil {
			return
		}
		out := make([]byte, HeaderSize)
		h.Put(out)
		if !bytes.Equal(out, b) {
			t.Fatalf("header %+v re-encodes differently", h)
		}
		switch h.Type {
		case Eager:
			if h.Length > testEager {
				t.Fatal("eager frame over the limit accepted")
			}
		case Data:
			if h.Length > testData {
				t.Fatal("data frame over the chunk size accepted")
			}
		case RTS:
			if h.Length > MaxMessage {
				t.Fatal("message over the limit accepted")
			}
		}
		if (h.Type == Eager || h.Type == RTS) && (h.Tag < 0 || h.Tag >= MaxTag) {
			t.Fatal("tag out of range accepted")
		}
	})
}
