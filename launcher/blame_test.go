package launcher

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gorun-hpc/gorun/comm"
)

func TestPeerLossReports(t *testing.T) {
	// comm's own error values, as a program prints them.
	peerErr := func(rank int, cause string) string {
		return (&comm.PeerError{Rank: rank, Err: errors.New(cause)}).Error()
	}
	for _, tc := range []struct {
		self  int
		lines string
		want  []int
	}{
		{1, "commstray: recv returned " + peerErr(2, "connection to 127.0.0.1:4100 closed by the peer (process exited or crashed)") + "\n", []int{2}},
		{0, "panic: allreduce: " + peerErr(3, "no word from 10.0.0.3:4100 for 30s (peer timeout): presumed dead") + "\n", []int{3}},
		{0, peerErr(4, "write to 10.0.0.4:4100: broken pipe") + "\n" + peerErr(5, "connection to 10.0.0.5:4100: read: connection reset by peer") + "\n", []int{4, 5}},
		{2, "x " + peerErr(7, "link closed") + "\n" + peerErr(7, "link closed") + "\n", []int{7}},
		{1, peerErr(2, "peer took nothing for 30s (peer timeout)") + "\n", []int{2}},
		// Not reports of a lost peer:
		{1, "rank 1: SIGTERM\nrank 2: failing\n", nil},
		{1, peerErr(2, "peer has finalized and will send nothing more") + "\n", nil},
		{1, "subrank 2: connection to x closed\nrank x: connection to y\nrank : link closed\n", nil},
		{1, peerErr(1, "link closed") + "\n", nil},              // itself
		{1, peerErr(9, "link closed") + "\n", nil},              // no such rank in a job of 8
		{1, "rank 123456789: link closed\n", nil},               // too long a number
		{3, "gorun: rank 3: protocol error from rank 2\n", nil}, // comm's own log line
		{0, "rank 1: connection to a closed\n[0] rank 2: link closed", []int{1, 2}},
	} {
		l := newLossReports(tc.self, 8)
		// Fed in pieces, as pipes deliver them: only complete lines reach scan.
		fw := newLineForwarder(newSink(new(sync.Mutex), nil), "", 0)
		fw.losses = l
		for i := 0; i < len(tc.lines); i += 7 {
			fw.Write([]byte(tc.lines[i:min(i+7, len(tc.lines))]))
		}
		fw.Close()
		assert.Equal(t, tc.want, l.ranks(), "%q", tc.lines)
	}

	// A rank reporting every peer of a large job keeps the first few.
	l := newLossReports(0, 1000)
	var b strings.Builder
	for r := 1; r < 1000; r++ {
		fmt.Fprintf(&b, "%s\n", peerErr(r, "link closed"))
	}
	l.scan([]byte(b.String()))
	assert.Len(t, l.ranks(), maxLossReports)
	assert.Equal(t, 1, l.ranks()[0])
}

func TestFailureOrder(t *testing.T) {
	type rk struct {
		seq  int
		lost []int
	}
	order := func(ranks ...rk) []int {
		var evs []exitEvent
		for i, r := range ranks {
			p := &rankProc{rank: i, seq: r.seq, losses: newLossReports(i, len(ranks))}
			for _, l := range r.lost {
				p.losses.add(l)
			}
			if r.seq == -2 {
				continue // did not fail
			}
			evs = append(evs, exitEvent{r: p})
		}
		var out []int
		for _, ev := range failureOrder(evs) {
			out = append(out, ev.r.rank)
		}
		return out
	}
	// By time when nothing was reported.
	assert.Equal(t, []int{1, 0, 2}, order(rk{1, nil}, rk{0, nil}, rk{2, nil}))
	// Rank 2 exited first but reported losing rank 0, which failed.
	assert.Equal(t, []int{0, 2, 1}, order(rk{1, nil}, rk{2, []int{0}}, rk{0, []int{0}}))
	// A chain: 2 lost 1, 1 lost 0.
	assert.Equal(t, []int{0, 2, 1}, order(rk{2, nil}, rk{1, []int{0}}, rk{0, []int{1}}))
	// A report naming a rank that did not fail changes nothing.
	assert.Equal(t, []int{1, 2}, order(rk{-2, nil}, rk{0, []int{0}}, rk{1, nil}))
	// Reports that form a cycle: back to time.
	assert.Equal(t, []int{1, 0}, order(rk{1, []int{1}}, rk{0, []int{0}}))
	// Unknown order (-1) comes after every known one, in the order reported.
	assert.Equal(t, []int{2, 0, 1}, order(rk{-1, nil}, rk{-1, nil}, rk{0, nil}))
}
