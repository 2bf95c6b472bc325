package comm

import (
	"fmt"
	"os"
	"time"
)

// lose reports world rank rank lost, for the first cause found (a link that ended, a silent
// peer, a protocol error, a failed goroutine rank): every transport fails what it has pending
// with the peer and takes no more for it, and the engine fails the receives that need it.
// Later reports of the same rank do nothing, so a transport that found the loss itself may
// report it after failing its own link, and is told again harmlessly.
func (w *world) lose(rank int, cause error) {
	if w.lost[rank].Swap(true) {
		return
	}
	for _, tr := range w.transports() {
		tr.PeerLost(rank, cause)
	}
	w.eng.PeerFailed(rank, cause)
}

// worldLiveness is the world's core.Liveness, which the network transports are given: Lose is
// world.lose, Lost the liveness rule below, Answers what the TCP mesh last heard of the peer.
type worldLiveness struct {
	w    *world
	l    *liveness
	mesh interface{ Answers(rank int) bool } // nil while the mesh is built: no peer answers
}

func (v worldLiveness) Answers(rank int) bool { return v.mesh != nil && v.mesh.Answers(rank) }

func (v worldLiveness) Lose(rank int, cause error) { v.w.lose(rank, cause) }
func (v worldLiveness) Lost(rank int, silent time.Duration) (bool, string) {
	return v.l.lost(rank, silent)
}

// liveness decides when a silent peer is lost, for every transport: one that has sent nothing
// (not even a heartbeat), or taken nothing, for the peer timeout. A peer on this host whose
// process still exists and is not stopped is never declared lost on silence alone: on an
// oversubscribed host a rank may wait for the CPU longer than the peer timeout, and its pid
// tells the truth where heartbeats cannot. (A peer that exits closes its links, which fails
// them at once.) Peers on other hosts keep the heartbeat rule.
type liveness struct {
	timeout time.Duration
	local   []procRef // by rank: the peer's process where it runs on this host, else zero
}

// procRef names a process: its pid, and its start time so that a reused pid is not taken for it.
type procRef struct {
	pid   int
	start uint64
}

// newLiveness records the processes of the peers on this rank's host. Peers in this very
// process (goroutine ranks) are left out: their pid says nothing of them.
func newLiveness(timeout time.Duration, table []rankInfo, me int) *liveness {
	l := &liveness{timeout: timeout, local: make([]procRef, len(table))}
	self := os.Getpid()
	for r, info := range table {
		if r == me || info.HostID != table[me].HostID || info.PID <= 0 || info.PID == self {
			continue
		}
		if st, ok := readProcState(info.PID); ok && st.running() {
			l.local[r] = procRef{pid: info.PID, start: st.start}
		}
	}
	return l
}

// lost reports whether the peer rank, silent for silent, is to be declared lost, and what
// was found of it, for the error.
func (l *liveness) lost(rank int, silent time.Duration) (bool, string) {
	if l == nil || l.timeout <= 0 || silent <= l.timeout {
		return false, ""
	}
	ref := l.local[rank]
	if ref.pid == 0 {
		return true, ""
	}
	st, ok := readProcState(ref.pid)
	switch {
	case !ok || st.start != ref.start:
		return true, fmt.Sprintf("; its process %d is gone", ref.pid)
	case !st.running():
		return true, fmt.Sprintf("; its process %d is in state %c (stopped or dead)", ref.pid, st.state)
	}
	return false, ""
}

// procState is what /proc/PID/stat says of a process.
type procState struct {
	state byte   // R, S, D, T (stopped), t (traced), Z (zombie), X (dead), ...
	start uint64 // start time in clock ticks after boot
}

// running: the process exists and may run when it gets a CPU.
func (s procState) running() bool {
	switch s.state {
	case 'T', 't', 'Z', 'X', 'x':
		return false
	}
	return true
}
