package launcher

import (
	"bytes"
	"sort"
	"strconv"
	"sync"
)

// Peer-loss reports. A rank that loses a peer through comm gets a comm.PeerError, whose text is
// "rank N: " followed by the cause, N being the peer it lost; programs print it (log.Fatal(err),
// a panic, an error line). gorun reads every forwarded line, so such a report tells it which
// rank a failing rank lost, an order of failures that no clock on a loaded machine can get
// wrong: the peer failed before the rank that reports losing it.

// lossCauses are the causes comm's TCP links give a lost peer (comm/internal/tcp: readFailed, fail and
// write; the shared-memory and RDMA transports report a peer's death through its TCP link).
var lossCauses = [][]byte{
	[]byte("connection to "), // "connection to ADDR closed by the peer (...)", "connection to ADDR: ERR"
	[]byte("write to "),
	[]byte("no word from "), // "... for D (peer timeout): presumed dead"
	[]byte("peer took nothing for "),
	[]byte("link closed"),
}

// maxLossReports bounds the distinct peers kept per rank: the first few are the ones that tell
// the order, and a rank printing one line per peer of a large job costs no more.
const maxLossReports = 16

// lossReports collects the peers one rank reported losing, from both of its output streams.
type lossReports struct {
	self, np int

	mu   sync.Mutex
	lost []int // distinct ranks in the order reported
}

func newLossReports(self, np int) *lossReports { return &lossReports{self: self, np: np} }

var rankWord = []byte("rank ")

// scan records the peers that complete lines of the rank's output report lost.
func (l *lossReports) scan(b []byte) {
	if l == nil || !bytes.Contains(b, rankWord) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.lost) < maxLossReports {
		i := bytes.Index(b, rankWord)
		if i < 0 {
			return
		}
		boundary := i == 0 || !isWordByte(b[i-1])
		b = b[i+len(rankWord):]
		if !boundary {
			continue
		}
		if peer, ok := lossAt(b); ok && peer != l.self && peer < l.np {
			l.add(peer)
		}
	}
}

// lossAt parses "N: CAUSE" at the start of b, CAUSE one of lossCauses.
func lossAt(b []byte) (int, bool) {
	n := 0
	for n < len(b) && n < 8 && '0' <= b[n] && b[n] <= '9' {
		n++
	}
	if n == 0 || !bytes.HasPrefix(b[n:], []byte(": ")) {
		return 0, false
	}
	rest := b[n+2:]
	for _, c := range lossCauses {
		if bytes.HasPrefix(rest, c) {
			peer, err := strconv.Atoi(string(b[:n]))
			return peer, err == nil
		}
	}
	return 0, false
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func (l *lossReports) add(peer int) {
	for _, p := range l.lost {
		if p == peer {
			return
		}
	}
	l.lost = append(l.lost, peer)
}

// ranks returns the peers reported lost, in the order reported.
func (l *lossReports) ranks() []int {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.lost...)
}

// failureOrder sorts failures into the order gorun names them: the first to fail, then the
// others in the order they failed. Time is the key: the kernel's order of exits (seq, see
// epollOrder; -1 when unknown, taken as later than every known exit), corrected by peer-loss
// reports, since a dying rank's sockets close before its exit completes and on a loaded
// machine the peer that loses it can finish exiting first. The first is, in turn:
//   - a remote rank whose host was lost to ssh (ssh notices it seconds late, by its keepalives,
//     while the ranks talking to that host notice by their own means, so its time is unknown);
//   - else the earliest of the ranks that reported losing no other failed rank;
//   - else (the reports form a cycle) the earliest.
func failureOrder(failures []exitEvent) []exitEvent {
	failed := map[int]bool{}
	for _, ev := range failures {
		failed[ev.r.rank] = true
	}
	follows := func(ev *exitEvent) bool {
		for _, p := range ev.r.losses.ranks() {
			if failed[p] {
				return true
			}
		}
		return false
	}
	out := append([]exitEvent(nil), failures...)
	earlier := func(a, b *exitEvent) bool {
		if (a.r.seq < 0) != (b.r.seq < 0) {
			return a.r.seq >= 0
		}
		return a.r.seq < b.r.seq
	}
	sort.SliceStable(out, func(i, j int) bool { return earlier(&out[i], &out[j]) })
	first := -1
	for _, pick := range []func(*exitEvent) bool{
		(*exitEvent).lost,
		func(ev *exitEvent) bool { return !follows(ev) },
		func(*exitEvent) bool { return true },
	} {
		for i := range out {
			if pick(&out[i]) {
				first = i
				break
			}
		}
		if first >= 0 {
			break
		}
	}
	if first > 0 {
		ev := out[first]
		copy(out[1:first+1], out[:first])
		out[0] = ev
	}
	return out
}

// reportedLost returns, for each rank that a failed rank reported losing and that has not
// exited even after gorun waited for it (a rank stopped, hung, or starved of CPU, which its
// peers' timeout declared dead; or on a host ssh has not given up on yet), a failure of its
// own: the report is the first sign that it failed.
func (s *supervisor) reportedLost() []exitEvent {
	var out []exitEvent
	seen := map[int]bool{}
	for _, ev := range s.failures {
		seen[ev.r.rank] = true
	}
	for _, ev := range s.failures {
		for _, p := range ev.r.losses.ranks() {
			if p >= 0 && p < len(s.procs) && !s.procs[p].done && !seen[p] {
				seen[p] = true
				out = append(out, exitEvent{r: s.procs[p], reportedBy: ev.r})
			}
		}
	}
	return out
}

// waitsForLost tells whether a failed rank reported losing a peer that has not been reaped
// yet: its exit, on its way, decides which of them is named.
func (s *supervisor) waitsForLost() bool {
	for _, ev := range s.failures {
		for _, p := range ev.r.losses.ranks() {
			if p >= 0 && p < len(s.procs) && !s.procs[p].done {
				return true
			}
		}
	}
	return false
}
