package doctor

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Verdicts of a check.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Check is one judged fact: what was checked, about which host or link, the verdict, what
// was seen and what to do.
type Check struct {
	Name    string `json:"name"`
	Subject string `json:"subject,omitempty"` // a host, a link "a-b", or empty for the cluster
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// Thresholds of the link checks. A link is judged against the other links of its transport,
// never against a fixed figure: what is fast depends on the fabric.
const (
	slowFactor      = 3.0  // bandwidth below median/slowFactor: a slow link (fail)
	latFactor       = 3.0  // latency above latFactor x median ...
	latMarginUs     = 20.0 // ... and more than this above it: a slow link (warn)
	asymFactor      = 3.0  // one direction this many times faster than the other ...
	asymSlow        = 1.5  // ... and below median/asymSlow (warn)
	retransRatio    = 0.02 // retransmitted/sent segments during the streams (warn)
	minLinksToJudge = 3    // fewer links of a transport give no median to compare with
)

func (r *Report) add(c Check) { r.Checks = append(r.Checks, c) }

// analyze judges the report: hosts, builds, limits, links; and sets the overall verdict.
func (r *Report) analyze() {
	r.Checks = nil
	r.checkHosts()
	r.checkJobs()
	r.checkSkew()
	r.checkLinks()
	r.Verdict = OK
	for _, c := range r.Checks {
		if c.Verdict == Fail || (c.Verdict == Warn && r.Verdict == OK) {
			r.Verdict = c.Verdict
		}
	}
}

func (r *Report) measured() []*HostReport {
	var out []*HostReport
	for i := range r.Hosts {
		if r.Hosts[i].Facts != nil {
			out = append(out, &r.Hosts[i])
		}
	}
	return out
}

func (r *Report) checkHosts() {
	for _, h := range r.Hosts {
		if !h.Reachable {
			r.add(Check{Name: "reach", Subject: h.Name, Verdict: Fail, Detail: h.Problem,
				Fix: "check that the host is up, that `ssh -o BatchMode=yes HOST true` works from here without a prompt, and that gorun is at the same path there"})
			continue
		}
		f := h.Facts
		if f == nil {
			continue
		}
		if f.Load1 >= 0 && f.Load1 >= float64(f.Cores) {
			r.add(Check{Name: "load", Subject: h.Name, Verdict: Warn,
				Detail: fmt.Sprintf("load average %.2f on %d cores: something else runs there (a build?)", f.Load1, f.Cores),
				Fix:    "find it with top and stop it, or leave the host out: timings there measure the other work"})
		}
		if f.MemTotal > 0 && f.MemAvailable > 0 && f.MemAvailable < f.MemTotal/10 {
			r.add(Check{Name: "memory", Subject: h.Name, Verdict: Warn,
				Detail: fmt.Sprintf("%s available of %s", gib(f.MemAvailable), gib(f.MemTotal)),
				Fix:    "free memory (other jobs, page cache of a model file is fine) before sizing HPL's N or loading a model"})
		}
		if f.THP == "never" {
			r.add(Check{Name: "hugepages", Subject: h.Name, Verdict: Warn, Detail: "transparent huge pages: never",
				Fix: "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (hpl and llm ask for huge pages with madvise)"})
		}
		if f.NoFile.Soft >= 0 && f.NoFile.Soft < 1024 {
			r.add(Check{Name: "nofile", Subject: h.Name, Verdict: Warn, Detail: fmt.Sprintf("open files limited to %d", f.NoFile.Soft),
				Fix: "raise it (ulimit -n, or LimitNOFILE in the service): every rank holds a socket per peer"})
		}
		if hasActivePort(f) && f.MemLock.Soft >= 0 && f.MemLock.Soft < 64<<20 {
			r.add(Check{Name: "memlock", Subject: h.Name, Verdict: Warn, Detail: fmt.Sprintf("locked memory limited to %s with an RDMA port active", bytesH(uint64(f.MemLock.Soft))),
				Fix: "RDMA registers (locks) message buffers: set memlock unlimited in /etc/security/limits.conf (or LimitMEMLOCK=infinity)"})
		}
		if math.Abs(f.ClockOffsetUs) > 50_000 && math.Abs(f.ClockOffsetUs) > f.ClockRTTUs {
			r.add(Check{Name: "clock", Subject: h.Name, Verdict: Warn, Detail: fmt.Sprintf("clock %+.1f ms from rank 0's", f.ClockOffsetUs/1e3),
				Fix: "run an NTP client (chrony, systemd-timesyncd): logs and traces across hosts will not line up"})
		}
		if strings.HasPrefix(f.Shm, "unavailable") {
			r.add(Check{Name: "shm", Subject: h.Name, Verdict: Warn, Detail: "shared memory " + f.Shm,
				Fix: "ranks on this host fall back to TCP: mount a tmpfs on /dev/shm"})
		}
		for _, d := range f.RDMA {
			if d.Soft {
				continue
			}
			active := false
			for _, p := range d.Ports {
				active = active || p.Active
			}
			if !active {
				r.add(Check{Name: "rdma", Subject: h.Name, Verdict: Warn, Detail: fmt.Sprintf("RDMA device %s has no active port", d.Name),
					Fix: "check the cable and the port's link (ibv_devinfo); on macOS, rdma_ctl enable in Recovery and bring the Thunderbolt interface up"})
			}
		}
	}
}

func (r *Report) checkJobs() {
	for _, j := range r.Jobs {
		if j.Code == 0 && j.Complete {
			continue
		}
		d := fmt.Sprintf("the %s measuring job ended with code %d", j.Transport, j.Code)
		if j.Error != "" {
			d += ": " + j.Error
		}
		if j.Stderr != "" {
			d += "; its last words: " + strings.ReplaceAll(j.Stderr, "\n", " | ")
		}
		r.add(Check{Name: "job", Subject: j.Transport, Verdict: Fail, Detail: d,
			Fix: "the links listed as failed were being measured when it ended; a host lost mid-job is named above"})
	}
}

// checkSkew compares the builds, kernel selections and CPU features of the hosts.
func (r *Report) checkSkew() {
	hs := r.measured()
	if len(hs) == 0 {
		return
	}
	groups := func(key func(*Facts) string) map[string][]string {
		m := map[string][]string{}
		for _, h := range hs {
			k := key(h.Facts)
			m[k] = append(m[k], h.Name)
		}
		return m
	}
	describe := func(m map[string][]string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return len(m[keys[i]]) > len(m[keys[j]]) || (len(m[keys[i]]) == len(m[keys[j]]) && keys[i] < keys[j])
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s on %s", k, strings.Join(m[k], ",")))
		}
		return strings.Join(parts, "; ")
	}
	builds := groups(func(f *Facts) string { return f.Build.ID + " (" + f.Build.GoVersion + ")" })
	if len(builds) > 1 {
		r.add(Check{Name: "build", Verdict: Fail, Detail: "gorun builds differ: " + describe(builds),
			Fix: "install one gorun build on every host (same source revision, Go version and flags): ranks of different builds may disagree on the wire or in their kernels"})
	} else {
		r.add(Check{Name: "build", Verdict: OK, Detail: fmt.Sprintf("every host runs gorun %s", describe(builds))})
	}
	panels := groups(func(f *Facts) string { return fmt.Sprintf("%d-row packed panels", f.PanelRows) })
	if len(panels) > 1 {
		r.add(Check{Name: "kernels", Verdict: Warn, Detail: "linear algebra kernels differ: " + describe(panels),
			Fix: "HPL then broadcasts panels unpacked (slower); give the hosts the same CPU generation or build with a common GOAMD64 level"})
	}
	feats := groups(func(f *Facts) string { return f.Arch + " " + strings.Join(f.Features, " ") })
	if len(feats) > 1 {
		r.add(Check{Name: "cpu", Verdict: Warn, Detail: "CPU features differ: " + describe(feats),
			Fix: "the slowest host sets the pace of HPL and tensor-parallel llm: weight the work or group like hosts"})
	}
}

// checkLinks judges every link against the other links of its transport.
func (r *Report) checkLinks() {
	var transports []string
	for _, l := range r.Links {
		if !slices.Contains(transports, l.Transport) {
			transports = append(transports, l.Transport)
		}
	}
	for _, t := range transports {
		var links []Link
		var bws, lats []float64
		for _, l := range r.Links {
			if l.Transport != t {
				continue
			}
			links = append(links, l)
			if l.Err == "" {
				bws = append(bws, l.BWABBest, l.BWBABest)
				lats = append(lats, l.LatMinUs)
			}
		}
		medBW, medLat := median(bws), median(lats)
		judge := len(lats) >= minLinksToJudge
		flagged := 0
		for _, l := range links {
			subj := t + " " + l.HostA + "-" + l.HostB
			if l.Err != "" {
				r.add(Check{Name: "link", Subject: subj, Verdict: Fail, Detail: "measurement failed: " + l.Err,
					Fix: "the link or a host dropped under load: check the cable and both interfaces' error counters (ip -s link); with TCP over Thunderbolt, prefer RDMA (--transport verbs)"})
				flagged++
				continue
			}
			if judge && min(l.BWABBest, l.BWBABest) < medBW/slowFactor {
				r.add(Check{Name: "link", Subject: subj, Verdict: Fail,
					Detail: fmt.Sprintf("slow: %.0f / %.0f MB/s at best (%s->%s / back) against a median of %.0f MB/s for %s links", l.BWABBest, l.BWBABest, l.HostA, l.HostB, medBW, t),
					Fix:    "a cable, port or negotiated speed is off, or traffic is shaped: compare ethtool/ifconfig speeds and tc qdisc on both ends, reseat or swap the cable"})
				flagged++
				continue
			}
			if judge && l.LatMinUs > latFactor*medLat && l.LatMinUs-medLat > latMarginUs {
				r.add(Check{Name: "link", Subject: subj, Verdict: Warn,
					Detail: fmt.Sprintf("slow: latency %.1f us at best against a median of %.1f us for %s links", l.LatMinUs, medLat, t),
					Fix:    "a longer path (a switch hop, a route through another host) or a busy host: check the route (ip route get) and the hosts' load"})
				flagged++
				continue
			}
			// Asymmetric: one direction much faster than the other, and the slower one slower
			// than the links' median (one lucky window alone is no asymmetry).
			if hi, lo := max(l.BWABBest, l.BWBABest), min(l.BWABBest, l.BWBABest); lo > 0 && hi/lo > asymFactor && (!judge || lo < medBW/asymSlow) {
				r.add(Check{Name: "link", Subject: subj, Verdict: Warn,
					Detail: fmt.Sprintf("asymmetric: %.0f MB/s %s->%s, %.0f MB/s back, at best", l.BWABBest, l.HostA, l.HostB, l.BWBABest),
					Fix:    "one direction is shaped or negotiated lower: check both ends' qdiscs and link settings"})
				flagged++
				continue
			}
			if l.Segs > 0 && float64(l.Retrans) > retransRatio*float64(l.Segs) {
				r.add(Check{Name: "link", Subject: subj, Verdict: Warn,
					Detail: fmt.Sprintf("lossy under load: %d of %d TCP segments retransmitted while streaming", l.Retrans, l.Segs),
					Fix:    "drops on the link (a bad cable, a full queue): check ip -s link for errors; TCP over Thunderbolt is known to fall over under load, prefer RDMA"})
				flagged++
			}
		}
		if flagged == 0 {
			d := fmt.Sprintf("%d %s %s: medians of the best latencies %.1f us and best bandwidths %.0f MB/s", len(links), t, plural(len(links), "link", "links"), medLat, medBW)
			if !judge {
				d += fmt.Sprintf(" (fewer than %d links: none compared)", minLinksToJudge)
			}
			r.add(Check{Name: "links", Subject: t, Verdict: OK, Detail: d})
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func bytesH(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.0f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
