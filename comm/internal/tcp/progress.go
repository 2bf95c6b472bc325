package tcp

import (
	"fmt"
	"github.com/gorun-hpc/gorun/comm/internal/core"
	"github.com/gorun-hpc/gorun/comm/internal/sched"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// tcpSpinTime: how long a waiter polls the sockets before it parks and leaves the reading
	// to the background goroutine (whose poll(2) wake-up then costs each message tens of
	// microseconds). Bounded, so a rank that waits long burns no core.
	tcpSpinTime = time.Millisecond
	// tcpSharedSpinPolls: on an oversubscribed host a waiter yields the core after every
	// empty poll, and parks after this many.
	tcpSharedSpinPolls = 2000
	// tcpSharedYields: on an oversubscribed host a waiter of TCP links alone yields after its
	// first empty polls, and after this many it sleeps in poll(2) on its data links instead
	// (at most tcpSharedSleep at a time): a yield hands the core to whichever rank the
	// kernel picks, often one that itself waits, where poll(2) gives it up until this rank's
	// bytes come.
	tcpSharedYields = 50
	tcpSharedSleep  = time.Millisecond
	// tcpBusyNap: while waiters poll, the background goroutine stays out of poll(2) (each
	// message would wake its thread) and only looks at the sockets this often.
	tcpBusyNap = 2 * time.Millisecond
	// tcpIdlePoll bounds a sleep of the background goroutine on the links, so that it checks
	// the peers' liveness at least this often.
	tcpIdlePoll = 100 * time.Millisecond
)

// startPolling starts the background goroutine that reads what arrives while nobody waits.
func (t *Transport) startPolling() {
	t.stop = make(chan struct{})
	t.pollDone = make(chan struct{})
	t.idle = NewLinkWaiter()
	go t.pollLoop()
}

func (t *Transport) stopPolling() {
	if t.stop == nil {
		return
	}
	select {
	case <-t.stop: // stopped already
		<-t.pollDone
		return
	default:
	}
	close(t.stop)
	t.idle.Wake()
	<-t.pollDone
	t.idle.Close() // after the goroutine's last wait, and wake's last use
}

// pollLoop reads the links nobody else is reading: it sleeps on every live link (t.idle)
// while no waiter polls, and naps while waiters do (they read what comes, and a thread woken
// for each message would take a core from them or their peers). It also declares dead a peer
// silent for the peer timeout.
func (t *Transport) pollLoop() {
	defer close(t.pollDone)
	var fds []unix.PollFd
	var live []*tcpPeer
	lastWaits := t.waits.Load()
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		t.checkLiveness()
		if waits := t.waits.Load(); t.waiters.Load() > 0 || waits != lastWaits {
			lastWaits = waits
			time.Sleep(tcpBusyNap)
			t.progressUnwatched()
			continue
		}
		fds, live = fds[:0], live[:0]
		for _, p := range t.peers {
			if p == nil || p.broken() {
				continue
			}
			ev := int16(unix.POLLIN)
			if p.pending.Load() {
				ev |= unix.POLLOUT
			}
			fds = append(fds, unix.PollFd{Fd: int32(p.fd), Events: ev})
			live = append(live, p)
		}
		if len(live) == 0 {
			// Every link is gone: nothing more can come.
			select {
			case <-t.stop:
				return
			case <-time.After(tcpIdlePoll):
			}
			continue
		}
		// The descriptors stay open while we poll: they are closed only after stopPolling.
		n, err := t.idle.Wait(fds, tcpIdlePoll)
		if err != nil && err != unix.EINTR {
			for _, p := range live {
				p.fail(fmt.Errorf("poll on the link to %s: %w", p.addr, err))
			}
			continue
		}
		if n <= 0 {
			continue
		}
		for i, p := range live {
			if fds[i].Revents&^unix.POLLOUT != 0 {
				p.progress(true)
			}
			if fds[i].Revents&unix.POLLOUT != 0 {
				p.flush()
			}
		}
	}
}

// checkLiveness fails the links whose peer has sent nothing (not even a heartbeat) for the
// peer timeout and that t.live declares lost. What waits in a socket counts as word from the
// peer: after this process itself waited long for a CPU, it is read before anyone is judged.
func (t *Transport) checkLiveness() {
	if t.timeout <= 0 {
		return
	}
	for _, p := range t.peers {
		if p == nil || t.clock()-time.Duration(p.heard.Load()) <= t.timeout || p.broken() {
			continue
		}
		p.progress(false)
		if lost, why := t.live.Lost(p.rank, t.clock()-time.Duration(p.heard.Load())); lost && !p.broken() {
			p.fail(fmt.Errorf("no word from %s for %v (peer timeout)%s: presumed dead", p.addr, t.timeout, why))
		}
	}
}

func (p *tcpPeer) broken() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// progress handles every frame that has come from p; it reports whether there was any. With
// wait it waits for another reader of p to finish first, else it leaves p to that reader.
func (p *tcpPeer) progress(wait bool) bool {
	if wait {
		p.rmu.Lock()
	} else if !p.rmu.TryLock() {
		return false
	}
	defer p.rmu.Unlock()
	did := false
	drained := false // the last read left the socket empty: another would find nothing
	for !p.broken() {
		if p.rlo == p.rhi {
			if drained {
				return did
			}
			got, err := p.fill(false)
			if err != nil {
				p.readFailed(err)
				return true
			}
			if !got {
				return did
			}
			drained = p.rhi < len(p.rbuf)
		}
		did = true
		if !p.handleFrame() {
			return true
		}
	}
	return did
}

// progressAll reads every link that has something and writes what queued output the sockets
// take; it reports whether anything moved. Waiters pass dataOnly: links that carry only
// heartbeats (the peer is reached through shared memory) are left to the background goroutine.
func (t *Transport) progressAll(wait, dataOnly bool) bool {
	did := false
	peers := t.peers
	if dataOnly {
		peers = t.dataPeers
	}
	for _, p := range peers {
		if p == nil {
			continue
		}
		if dataOnly {
			p.polls.Add(1)
		}
		if p.progress(wait) {
			did = true
		}
		if p.flush() {
			did = true
		}
	}
	return did
}

// progressUnwatched is the background goroutine's look at the links while waiters poll: while
// one polls it reads only the links no waiter has polled since its last look; it pushes queued output on
// all of them. A link a waiter polls is left to it: taking its read lock would make the waiter's
// polls find nothing (and park it) while this goroutine reads the rest of a large frame,
// one more thread spinning for the cores the ranks need.
func (t *Transport) progressUnwatched() {
	polling := t.waiters.Load() > 0
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		n := p.polls.Load()
		if !polling || n == p.seenPolls {
			p.progress(false)
		}
		p.seenPolls = n
		p.flush()
	}
}

// Poll drives progress while the caller waits for r: it reads the links itself (no hand-off
// to another goroutine or thread on the fast path), yields the core between empty polls on
// an oversubscribed host, and gives up after a while, leaving r to the background goroutine
// (Wait then blocks on r's channel), so that a long wait costs no CPU.
func (t *Transport) Poll(r *core.Request) {
	t.waiters.Add(1)
	t.waits.Add(1)
	defer t.waiters.Add(-1)
	idle := 0 // polls in a row that found nothing
	var idleSince time.Time
	for !r.Finished() {
		if t.progressAll(false, true) {
			idle = 0
			continue
		}
		idle++
		if r.Patient || t.spunOut(idle, &idleSince, true) {
			return
		}
	}
}

// spunOut tells a waiter whose idle-th poll in a row found nothing to stop polling: on an
// oversubscribed host it yields the core after each empty poll (with sleep, it sleeps on the
// data links after tcpSharedYields of them) and stops after tcpSharedSpinPolls of them; else
// it stops after tcpSpinTime.
func (t *Transport) spunOut(idle int, idleSince *time.Time, sleep bool) bool {
	if t.oversubscribed {
		if !sleep || idle < tcpSharedYields || !t.sleepOnLinks(tcpSharedSleep) {
			sched.Yield()
		}
		return idle >= tcpSharedSpinPolls
	}
	// The clock is read only now and then, and not in the first polls at all (most waits end
	// there).
	if idle%64 != 0 {
		return false
	}
	if idle == 64 {
		*idleSince = time.Now()
		return false
	}
	return time.Since(*idleSince) >= tcpSpinTime
}

// mixedProgress drives a rank that reaches some peers through a data transport (shared memory
// for the peers on its host) and the others through TCP: a waiter polls both for a while, then
// sleeps as the data transport's waiters do (a TCP completion by the background goroutine wakes
// it through kick).
type mixedProgress struct {
	data core.ProgressSource
	tcp  *Transport
}

func (m mixedProgress) Poll(r *core.Request) {
	t := m.tcp
	t.waiters.Add(1)
	t.waits.Add(1)
	idle := 0
	var idleSince time.Time
	for !r.Finished() {
		if m.data.PollOnce() || t.progressAll(false, true) {
			idle = 0
			continue
		}
		idle++
		// Shared-memory arrivals would not end a sleep on the sockets: no sleeping here.
		if r.Patient || t.spunOut(idle, &idleSince, false) {
			break
		}
	}
	t.waiters.Add(-1)
	if !r.Finished() {
		m.data.Poll(r)
	}
}

func (m mixedProgress) Kick() { m.data.Kick() }

// Kick: a waiter that stopped polling blocks on its request's channel, which completion closes.
func (t *Transport) Kick() {}

// sleepOnLinks sleeps in poll(2) until a data link has bytes to read (or room for queued
// output), a link ends, or wait passes; false (no sleep) when there are more data links than
// it polls. The descriptors are held open (fdMu) for the sleep, which bounds how long a
// closer waits.
func (t *Transport) sleepOnLinks(wait time.Duration) bool {
	var fds [16]unix.PollFd
	var held [16]*tcpPeer
	if len(t.dataPeers) > len(fds) {
		return false
	}
	n, h := 0, 0
	for _, p := range t.dataPeers {
		if p == nil {
			continue
		}
		p.fdMu.RLock()
		held[h] = p
		h++
		if p.fdClosed {
			continue
		}
		ev := int16(unix.POLLIN)
		if p.pending.Load() {
			ev |= unix.POLLOUT
		}
		fds[n] = unix.PollFd{Fd: int32(p.fd), Events: ev}
		n++
	}
	if n > 0 {
		unix.Poll(fds[:n], max(int(wait/time.Millisecond), 1))
	}
	for _, p := range held[:h] {
		p.fdMu.RUnlock()
	}
	return n > 0
}
