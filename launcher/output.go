package launcher

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"
)

// Defaults for output forwarding.
const (
	// maxLine bounds how much of one unfinished line is held back. A longer line is forwarded
	// in pieces of this size, so a rank that never prints a newline cannot exhaust memory.
	maxLine = 1 << 20
	// idleFlush is how long an unfinished line of the rank reading a terminal may wait for its
	// newline before it is forwarded anyway, so a prompt appears (see Job.IdleFlush).
	idleFlush = 250 * time.Millisecond
)

// TagFor returns the prefix --tag-output puts before each line of a rank: "[rank] ", as MPICH's
// -prepend-rank writes it.
func TagFor(rank int) string { return "[" + strconv.Itoa(rank) + "] " }

// sink is one destination (gorun's stdout or stderr) shared by all ranks. Every forwarded piece
// is one Write under the lock. stdout and stderr share the lock because both are usually the
// same terminal.
type sink struct {
	mu *sync.Mutex
	w  io.Writer
	// dangling is the forwarder whose last piece ended mid-line (an unfinished line flushed by
	// the idle timer or the size bound). If anyone else writes first, the line is ended with a
	// newline, so lines of different ranks never mix; the owner's continuation starts a new,
	// tagged line.
	dangling *lineForwarder
	scratch  []byte
}

func newSink(mu *sync.Mutex, w io.Writer) *sink {
	if w == nil {
		w = io.Discard
	}
	return &sink{mu: mu, w: w}
}

// emit writes b for forwarder f (nil for gorun's own messages): whole lines, possibly followed
// by an unfinished fragment. f's tag goes before every line start.
func (s *sink) emit(f *lineForwarder, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.scratch[:0]
	if s.dangling != nil && s.dangling != f {
		out = append(out, '\n')
		s.dangling = nil
	}
	var tag []byte
	if f != nil {
		tag = f.tag
	}
	mid := f != nil && s.dangling == f
	for start := 0; start < len(b); {
		if !mid {
			out = append(out, tag...)
		}
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			out = append(out, b[start:]...)
			mid = true
			break
		}
		out = append(out, b[start:start+i+1]...)
		mid = false
		start += i + 1
	}
	if mid {
		s.dangling = f
	} else {
		s.dangling = nil
	}
	s.flush(out)
}

// endLine ends f's unfinished line with a newline, if the destination is still in it.
func (s *sink) endLine(f *lineForwarder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dangling == f {
		s.dangling = nil
		s.flush(append(s.scratch[:0], '\n'))
	}
}

func (s *sink) flush(out []byte) {
	// A write error (closed terminal, broken pipe) is not the ranks' fault: keep draining
	// their pipes so they never block on a full pipe, and drop the bytes.
	_, _ = s.w.Write(out)
	if cap(out) <= 4*maxLine {
		s.scratch = out[:0] // keep the buffer unless one huge burst grew it
	} else {
		s.scratch = nil
	}
}

// lineForwarder receives the raw byte stream of one rank's stdout or stderr and forwards it
// to its sink in whole lines, each prefixed with the rank's tag when there is one.
type lineForwarder struct {
	dst   *sink
	tag   []byte // nil when untagged
	flush time.Duration

	mu      sync.Mutex
	pending []byte // the current unfinished line (the bytes after the last newline seen)
	timer   *time.Timer

	// mark, when set, starts the status line of a remote rank's script (see statusMark): the
	// line is taken out of the output and its number kept in status (-1 until seen).
	mark   []byte
	status int

	// losses, when set, records the peers the rank's complete lines report lost.
	losses *lossReports
}

func newLineForwarder(dst *sink, tag string, flush time.Duration) *lineForwarder {
	f := &lineForwarder{dst: dst, flush: flush, status: -1}
	if tag != "" {
		f.tag = []byte(tag)
	}
	return f
}

// Write accepts a chunk read from the rank's pipe. Complete lines are forwarded at once, in a
// single write; the unfinished tail waits for its newline, for maxLine bytes, or for the idle
// timer.
func (f *lineForwarder) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, p...)
	if last := bytes.LastIndexByte(f.pending, '\n'); last >= 0 {
		lines := f.pending[:last+1]
		if f.mark != nil {
			lines = f.takeStatus(lines)
		}
		if len(lines) > 0 {
			f.losses.scan(lines)
			f.dst.emit(f, lines)
		}
		f.pending = append(f.pending[:0], f.pending[last+1:]...)
	}
	if len(f.pending) >= maxLine {
		f.dst.emit(f, f.pending)
		f.pending = f.pending[:0]
	}
	f.armTimer()
	return len(p), nil
}

// Close forwards a final line that has no newline. Untagged it is forwarded as it is (a single
// rank's output stays byte for byte what the program wrote); tagged it is ended with a newline
// so the next rank's tag starts a line.
func (f *lineForwarder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
	if len(f.pending) > 0 {
		f.losses.scan(f.pending)
		f.dst.emit(f, f.pending)
		f.pending = f.pending[:0]
	}
	if f.tag != nil {
		f.dst.endLine(f)
	}
	return nil
}

// takeStatus removes the status line from complete lines and records its number. Text the
// program wrote before it without a newline stays, ended by the status line's newline.
func (f *lineForwarder) takeStatus(lines []byte) []byte {
	i := bytes.Index(lines, f.mark)
	if i < 0 {
		return lines
	}
	end := i + bytes.IndexByte(lines[i:], '\n')
	if n, err := strconv.Atoi(string(lines[i+len(f.mark) : end])); err == nil && n >= 0 {
		f.status = n
	}
	if i > 0 && lines[i-1] != '\n' {
		end-- // keep the newline for the unfinished text before the mark
	}
	return append(lines[:i:i], lines[end+1:]...)
}

// exitStatus is the status a remote rank's script reported, or -1. Valid once closed.
func (f *lineForwarder) exitStatus() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *lineForwarder) armTimer() {
	if len(f.pending) == 0 || f.flush <= 0 {
		if f.timer != nil {
			f.timer.Stop()
		}
		return
	}
	if f.timer == nil {
		f.timer = time.AfterFunc(f.flush, f.idle)
		return
	}
	f.timer.Reset(f.flush)
}

func (f *lineForwarder) idle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) > 0 {
		f.dst.emit(f, f.pending)
		f.pending = f.pending[:0]
	}
}
