package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// The measuring job: every rank runs `gorun doctor --rank`, reports its facts to rank 0, and
// the pairs of ranks measure their link in turn (one pair at a time, so that no two
// measurements share a link or a core). Rank 0 prints one event per line on its stdout, each
// `eventMark` and a JSON object, which gorun doctor reads; the others print nothing.
const eventMark = "gorun-doctor-event "

// event is one line of rank 0's output.
type event struct {
	Kind  string  `json:"kind"` // "facts", "pair" (a pair starts), "link" (its result), "done"
	Facts []Facts `json:"facts,omitempty"`
	A     int     `json:"a,omitempty"`
	B     int     `json:"b,omitempty"`
	Link  *Link   `json:"link,omitempty"`
}

// Link is one pair's measurement over one transport. A and B are ranks of the job (rank
// order is host order).
type Link struct {
	Transport string `json:"transport"`
	A         int    `json:"a"`
	B         int    `json:"b"`
	HostA     string `json:"host_a"`
	HostB     string `json:"host_b"`
	// One-way latency of small messages: LatUs over all timed round trips (as osu_latency
	// and commbench report it), LatMedUs and LatMinUs over batches of round trips (the best
	// batch is what links are judged by: a busy host's stalls move the mean and even the
	// median, rarely the best batch; a longer path moves them all).
	LatUs    float64 `json:"latency_us"`
	LatMedUs float64 `json:"latency_median_us"`
	LatMinUs float64 `json:"latency_min_us"`
	// Streaming bandwidth A to B and back, MB/s (1 MB = 1e6 B): over the whole run (as
	// osu_bw and commbench report it), and in its best window, which links are judged by
	// (what the link can carry; a busy host's stalls lower the whole run's figure, rarely the
	// best window's).
	BWAB     float64 `json:"bw_ab_mbps"`
	BWBA     float64 `json:"bw_ba_mbps"`
	BWABBest float64 `json:"bw_ab_best_mbps"`
	BWBABest float64 `json:"bw_ba_best_mbps"`
	// TCP counters of both hosts (their network namespaces) over the streaming: segments
	// sent, retransmitted, and connections reset. Counted only for the tcp transport on Linux.
	// They are the whole hosts': other connections' resets count too, so only the share of
	// retransmitted segments is judged (a reset of the job's own connections ends the job,
	// and the link is reported failed).
	Segs    int64  `json:"tcp_segments,omitempty"`
	Retrans int64  `json:"tcp_retransmits,omitempty"`
	Resets  int64  `json:"tcp_resets,omitempty"`
	Err     string `json:"error,omitempty"`
}

// params are the measuring job's knobs, passed on its command line.
type params struct {
	label   string
	latMsg  int
	latTime time.Duration
	bwMsg   int
	window  int
	bwTime  time.Duration
}

func (p params) args() []string {
	return []string{"doctor", "--rank", "--label", p.label, "--lat-msg", strconv.Itoa(p.latMsg), "--lat-time", p.latTime.String(),
		"--bw-msg", strconv.Itoa(p.bwMsg), "--window", strconv.Itoa(p.window), "--bw-time", p.bwTime.String()}
}

func defaultParams() params {
	return params{latMsg: 8, latTime: 200 * time.Millisecond, bwMsg: 1 << 20, window: 64, bwTime: 300 * time.Millisecond}
}

const (
	tagFacts = 101
	tagClock = 102
	tagLink  = 103
	tagPing  = 110
	tagHead  = 111
	tagData  = 112
	tagAck   = 113
	tagStats = 114
)

// rankMain is `gorun doctor --rank ...`, one rank of the measuring job.
func rankMain(args []string, stdout, stderr io.Writer) int {
	p := defaultParams()
	fs := pflag.NewFlagSet("gorun doctor --rank", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("rank", true, "")
	fs.StringVar(&p.label, "label", "", "")
	fs.IntVar(&p.latMsg, "lat-msg", p.latMsg, "")
	fs.DurationVar(&p.latTime, "lat-time", p.latTime, "")
	fs.IntVar(&p.bwMsg, "bw-msg", p.bwMsg, "")
	fs.IntVar(&p.window, "window", p.window, "")
	fs.DurationVar(&p.bwTime, "bw-time", p.bwTime, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if p.latMsg < 1 || p.latMsg > 1<<20 || p.bwMsg < 1 || p.bwMsg > 64<<20 || p.window < 1 || p.window > 256 || p.bwMsg*p.window > 1<<30 {
		fmt.Fprintf(stderr, "gorun doctor --rank: message sizes or window out of range\n")
		return 2
	}
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintf(stderr, "gorun doctor: %v\n", err)
		return 1
	}
	emit := func(ev event) {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(stdout, "%s%s\n", eventMark, b)
	}
	if err := measure(c, p, emit); err != nil {
		fmt.Fprintf(stderr, "gorun doctor: rank %d on %s: %v\n", c.Rank(), c.Host(), err)
		return 1
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(stderr, "gorun doctor: rank %d: %v\n", c.Rank(), err)
		return 1
	}
	return 0
}

// measure runs the job's collective part: facts and clocks, then every pair in turn. Rank 0
// calls emit with each event.
func measure(c *comm.Comm, p params, emit func(event)) error {
	r, n := c.Rank(), c.Size()
	facts := collectFacts(r, c.Host())
	if r != 0 {
		if err := c.SendValue(facts, 0, tagFacts); err != nil {
			return err
		}
		if err := clockReply(c); err != nil {
			return err
		}
	} else {
		all := make([]Facts, n)
		all[0] = facts
		for src := 1; src < n; src++ {
			if _, err := c.RecvValue(&all[src], src, tagFacts); err != nil {
				return fmt.Errorf("facts of rank %d: %w", src, err)
			}
			off, rtt, err := clockProbe(c, src)
			if err != nil {
				return fmt.Errorf("clock of rank %d: %w", src, err)
			}
			all[src].ClockOffsetUs, all[src].ClockRTTUs = off, rtt
		}
		emit(event{Kind: "facts", Facts: all})
	}
	// One streaming buffer for every pair, touched before any timing.
	var buf []byte
	if n > 1 {
		buf = make([]byte, p.bwMsg*p.window)
		for i := range buf {
			buf[i] = byte(i)
		}
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			// Ranks outside the pair wait patiently (no polling), leaving the cores to it.
			if err := collectives.Barrier(c.Patient()); err != nil {
				return err
			}
			if r == 0 {
				emit(event{Kind: "pair", A: a, B: b})
			}
			var l *Link
			switch r {
			case a:
				res, err := pairMeasure(c, p, buf, b, true)
				if err != nil {
					return fmt.Errorf("link to rank %d (%s): %w", b, p.label, err)
				}
				l = &res
			case b:
				if _, err := pairMeasure(c, p, buf, a, false); err != nil {
					return fmt.Errorf("link to rank %d (%s): %w", a, p.label, err)
				}
			}
			switch {
			case r == a && a != 0:
				if err := c.SendValue(*l, 0, tagLink); err != nil {
					return err
				}
			case r == 0 && a != 0:
				l = new(Link)
				if _, err := c.Patient().RecvValue(l, a, tagLink); err != nil {
					return err
				}
			}
			if r == 0 {
				l.Transport, l.A, l.B = p.label, a, b
				emit(event{Kind: "link", Link: l})
			}
		}
	}
	if err := collectives.Barrier(c); err != nil {
		return err
	}
	if r == 0 {
		emit(event{Kind: "done"})
	}
	return nil
}

// clockProbe measures rank src's clock against this one's (rank 0's): the reply carries src's
// wall clock, taken to be at the middle of the round trip; the shortest of several round trips
// bounds the error best.
func clockProbe(c *comm.Comm, src int) (offUs, rttUs float64, err error) {
	best := time.Duration(1 << 62)
	ts := make([]int64, 1)
	for range 16 {
		t0 := time.Now()
		if err := comm.Send(c, []int64{t0.UnixNano()}, src, tagClock); err != nil {
			return 0, 0, err
		}
		if _, err := comm.Recv(c, ts, src, tagClock); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		if rtt := t1.Sub(t0); rtt < best {
			best = rtt
			mid := t0.UnixNano() + int64(rtt/2)
			offUs = float64(ts[0]-mid) / 1e3
		}
	}
	return offUs, float64(best) / 1e3, nil
}

func clockReply(c *comm.Comm) error {
	buf := make([]int64, 1)
	for range 16 {
		if _, err := comm.Recv(c, buf, 0, tagClock); err != nil {
			return err
		}
		if err := comm.Send(c, []int64{time.Now().UnixNano()}, 0, tagClock); err != nil {
			return err
		}
	}
	return nil
}

// pairMeasure runs one pair's measurement between this rank and peer; lead is the lower rank,
// which decides when each part ends and returns the result (the peer's is empty).
func pairMeasure(c *comm.Comm, p params, buf []byte, peer int, lead bool) (Link, error) {
	var l Link
	lat, latMed, latMin, err := pingPong(c, p, peer, lead)
	if err != nil {
		return l, fmt.Errorf("latency: %w", err)
	}
	before, okBefore := tcpCounters()
	ab, abBest, err := stream(c, p, buf, peer, lead)
	if err != nil {
		return l, fmt.Errorf("streaming to the higher rank: %w", err)
	}
	ba, baBest, err := stream(c, p, buf, peer, !lead)
	if err != nil {
		return l, fmt.Errorf("streaming to the lower rank: %w", err)
	}
	after, okAfter := tcpCounters()
	var mine tcpStats
	if okBefore && okAfter {
		mine = after.minus(before)
	}
	if !lead {
		// The lower rank reports the link: it gets this side's counters and the bandwidth
		// this side measured sending.
		return l, c.SendValue(peerReport{TCP: mine, BW: ba, BWBest: baBest}, peer, tagStats)
	}
	var pr peerReport
	if _, err := c.RecvValue(&pr, peer, tagStats); err != nil {
		return l, err
	}
	theirs := pr.TCP
	l.LatUs, l.LatMedUs, l.LatMinUs, l.BWAB, l.BWBA = lat, latMed, latMin, ab, pr.BW
	l.BWABBest, l.BWBABest = abBest, pr.BWBest
	if p.label == "tcp" {
		l.Segs = mine.OutSegs + theirs.OutSegs
		l.Retrans = mine.RetransSegs + theirs.RetransSegs
		l.Resets = mine.EstabResets + theirs.EstabResets + mine.OutRsts + theirs.OutRsts
	}
	return l, nil
}

// pingPong returns the one-way latency of p.latMsg-byte messages as osu_latency measures it
// (the mean over every timed round trip), and the median and best of batches of round trips.
// The first byte of each ping says whether another follows, so the peer needs no other
// message to stop.
func pingPong(c *comm.Comm, p params, peer int, lead bool) (mean, median, best float64, err error) {
	buf := make([]byte, p.latMsg)
	if !lead {
		for {
			if _, err := comm.Recv(c, buf, peer, tagPing); err != nil {
				return 0, 0, 0, err
			}
			if err := comm.Send(c, buf, peer, tagPing); err != nil {
				return 0, 0, 0, err
			}
			if buf[0] == 0 {
				return 0, 0, 0, nil
			}
		}
	}
	const batch, warmup, maxBatches = 50, 100, 400
	var batches []float64
	var total time.Duration
	start := time.Now()
	for i := 0; ; i++ {
		timed := i >= warmup
		t0 := time.Now()
		n := 1
		if timed {
			n = batch
		}
		last := false
		for k := range n {
			last = timed && k == n-1 && (time.Since(start) >= p.latTime || len(batches)+1 >= maxBatches)
			buf[0] = 1
			if last {
				buf[0] = 0
			}
			if err := comm.Send(c, buf, peer, tagPing); err != nil {
				return 0, 0, 0, err
			}
			if _, err := comm.Recv(c, buf, peer, tagPing); err != nil {
				return 0, 0, 0, err
			}
		}
		if timed {
			el := time.Since(t0)
			total += el
			batches = append(batches, el.Seconds()*1e6/float64(2*batch))
			if last {
				break
			}
		}
	}
	mean = total.Seconds() * 1e6 / float64(2*batch*len(batches))
	slices.Sort(batches)
	return mean, batches[len(batches)/2], batches[0], nil
}

// stream measures one direction's bandwidth as osu_bw does: the sender posts a window of
// p.bwMsg-byte messages, the receiver acknowledges the window; one untimed window first, then
// windows until p.bwTime has passed. A head message before each window says whether one follows.
// The sender returns MB/s over the timed windows and in the best of them (the receiver 0s).
func stream(c *comm.Comm, p params, buf []byte, peer int, sending bool) (mean, best float64, err error) {
	head := make([]byte, 1)
	ack := make([]byte, 1)
	reqs := make([]*comm.Request, p.window)
	if !sending {
		for {
			if _, err := comm.Recv(c, head, peer, tagHead); err != nil {
				return 0, 0, err
			}
			if head[0] == 0 {
				return 0, 0, nil
			}
			for i := range reqs {
				reqs[i] = comm.Irecv(c, buf[i*p.bwMsg:(i+1)*p.bwMsg], peer, tagData)
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return 0, 0, err
			}
			if err := comm.Send(c, ack, peer, tagAck); err != nil {
				return 0, 0, err
			}
		}
	}
	var t0 time.Time
	windows := 0
	shortest := time.Duration(1 << 62)
	bytes := float64(p.window * p.bwMsg)
	for {
		w0 := time.Now()
		head[0] = 1
		if err := comm.Send(c, head, peer, tagHead); err != nil {
			return 0, 0, err
		}
		for i := range reqs {
			reqs[i] = comm.Isend(c, buf[i*p.bwMsg:(i+1)*p.bwMsg], peer, tagData)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return 0, 0, err
		}
		if _, err := comm.Recv(c, ack, peer, tagAck); err != nil {
			return 0, 0, err
		}
		if t0.IsZero() {
			t0 = time.Now() // after the warm-up window
			continue
		}
		windows++
		shortest = min(shortest, time.Since(w0))
		if el := time.Since(t0); el >= p.bwTime {
			head[0] = 0
			if err := comm.Send(c, head, peer, tagHead); err != nil {
				return 0, 0, err
			}
			return float64(windows) * bytes / el.Seconds() / 1e6, bytes / shortest.Seconds() / 1e6, nil
		}
	}
}

// peerReport is what the higher rank of a pair sends the lower after the measurement.
type peerReport struct {
	TCP    tcpStats
	BW     float64 // MB/s it streamed to the lower rank
	BWBest float64 // ... in its best window
}

// tcpStats are the TCP counters of /proc/net/snmp that tell a lossy link.
type tcpStats struct {
	OutSegs, RetransSegs, EstabResets, OutRsts int64
}

func (a tcpStats) minus(b tcpStats) tcpStats {
	return tcpStats{a.OutSegs - b.OutSegs, a.RetransSegs - b.RetransSegs, a.EstabResets - b.EstabResets, a.OutRsts - b.OutRsts}
}

// parseSNMP reads the "Tcp:" header and value lines of /proc/net/snmp.
func parseSNMP(text string) (tcpStats, bool) {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "Tcp:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if names == nil {
			names = fields
			continue
		}
		if len(fields) != len(names) {
			return tcpStats{}, false
		}
		var s tcpStats
		found := 0
		for i, name := range names {
			v, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				continue
			}
			switch name {
			case "OutSegs":
				s.OutSegs, found = v, found+1
			case "RetransSegs":
				s.RetransSegs, found = v, found+1
			case "EstabResets":
				s.EstabResets, found = v, found+1
			case "OutRsts":
				s.OutRsts, found = v, found+1
			}
		}
		return s, found == 4
	}
	return tcpStats{}, false
}
