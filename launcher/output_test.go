package launcher

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe to read while timers write to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tagLines is the reference for a tagged stream: the tag before every line, a newline added
// to an unfinished last line.
func tagLines(tag string, data []byte) string {
	if len(data) == 0 {
		return ""
	}
	s := string(data)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	lines := strings.SplitAfter(s, "\n")
	return tag + strings.Join(lines[:len(lines)-1], tag)
}

func TestForwarderReassemblesLines(t *testing.T) {
	var out syncBuffer
	s := newSink(new(sync.Mutex), &out)
	f := newLineForwarder(s, TagFor(3), 0)
	for _, chunk := range []string{"ab", "c\nde", "f\n\ng", "h\ni", "j"} {
		f.Write([]byte(chunk))
	}
	assert.Equal(t, "[3] abc\n[3] def\n[3] \n[3] gh\n", out.String(), "an unfinished line is held")
	f.Close()
	assert.Equal(t, "[3] abc\n[3] def\n[3] \n[3] gh\n[3] ij\n", out.String())

	out = syncBuffer{}
	s = newSink(new(sync.Mutex), &out)
	f = newLineForwarder(s, "", 0)
	f.Write([]byte("x\ny"))
	f.Close()
	assert.Equal(t, "x\ny", out.String(), "untagged output is forwarded byte for byte")
}

func TestIdleFlushAndLineBreaking(t *testing.T) {
	var out syncBuffer
	s := newSink(new(sync.Mutex), &out)
	prompt := newLineForwarder(s, TagFor(0), 20*time.Millisecond)
	other := newLineForwarder(s, TagFor(1), 0)

	prompt.Write([]byte("Enter N: "))
	require.Eventually(t, func() bool { return out.String() == "[0] Enter N: " }, 5*time.Second, 5*time.Millisecond,
		"the prompt was not flushed: %q", out.String())
	// Another rank's line must not continue the prompt's line.
	other.Write([]byte("busy\n"))
	assert.Equal(t, "[0] Enter N: \n[1] busy\n", out.String())
	// The prompt's continuation starts a fresh tagged line.
	prompt.Write([]byte("42\n"))
	assert.Equal(t, "[0] Enter N: \n[1] busy\n[0] 42\n", out.String())

	// gorun's own messages end a dangling line too.
	prompt.Write([]byte("more? "))
	require.Eventually(t, func() bool { return strings.HasSuffix(out.String(), "[0] more? ") }, 5*time.Second, 5*time.Millisecond)
	s.emit(nil, []byte("gorun: done\n"))
	assert.True(t, strings.HasSuffix(out.String(), "[0] more? \ngorun: done\n"), "%q", out.String())
	prompt.Close()
	other.Close()
	assert.True(t, strings.HasSuffix(out.String(), "[0] more? \ngorun: done\n"), "nothing pending, nothing added: %q", out.String())
}

func TestForwarderWithoutIdleFlushWaitsForNewline(t *testing.T) {
	var out syncBuffer
	s := newSink(new(sync.Mutex), &out)
	f := newLineForwarder(s, TagFor(0), 0)
	f.Write([]byte("slow"))
	time.Sleep(50 * time.Millisecond)
	assert.Empty(t, out.String())
	f.Write([]byte(" line\n"))
	assert.Equal(t, "[0] slow line\n", out.String())
}

func TestVeryLongLineIsForwardedInPieces(t *testing.T) {
	var out syncBuffer
	s := newSink(new(sync.Mutex), &out)
	f := newLineForwarder(s, TagFor(2), 0)
	long := bytes.Repeat([]byte("z"), maxLine+10)
	f.Write(long)
	assert.Equal(t, "[2] "+string(long), out.String(), "a line over maxLine is not held back whole")
	f.Write([]byte("tail\nnext\n"))
	assert.Equal(t, "[2] "+string(long)+"tail\n[2] next\n", out.String())
}

// FuzzLineForwarder checks, for any bytes cut into any three chunks, that the tagged output is
// the input with a tag before each line.
func FuzzLineForwarder(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), uint(3), uint(8))
	f.Add([]byte("no newline"), uint(0), uint(100))
	f.Add([]byte("\n\n\n"), uint(1), uint(2))
	f.Add([]byte("a\r\nb\x00c\n"), uint(4), uint(4))
	f.Fuzz(func(t *testing.T, data []byte, c1, c2 uint) {
		n := uint(len(data))
		c1, c2 = min(c1, n), min(c2, n)
		if c1 > c2 {
			c1, c2 = c2, c1
		}
		var out syncBuffer
		fw := newLineForwarder(newSink(new(sync.Mutex), &out), "[7] ", 0)
		fw.Write(data[:c1])
		fw.Write(data[c1:c2])
		fw.Write(data[c2:])
		fw.Close()
		if got, want := out.String(), tagLines("[7] ", data); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
