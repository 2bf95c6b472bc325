package doctor

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report for a person: hosts, transports, link matrices, checks.
func (r *Report) WriteTable(w io.Writer) error {
	live := 0
	for _, h := range r.Hosts {
		if h.Reachable {
			live++
		}
	}
	what := "hosts"
	if r.Mode == "local" {
		what = "ranks on this host"
	}
	fmt.Fprintf(w, "gorun doctor: %d %s (%d measured), %.1f s\n\n", len(r.Hosts), what, live, r.Seconds)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tGORUN BUILD\tGO\tOS / KERNEL\tCPU\tCORES\tFEATURES\tPANEL\tMEM AVAIL/TOTAL\tTHP\tNOFILE\tMEMLOCK\tLOAD\tCLOCK")
	for _, h := range r.Hosts {
		f := h.Facts
		if f == nil {
			why := "not measured"
			if h.Problem != "" {
				why = h.Problem
			}
			fmt.Fprintf(tw, "%s\t%s\n", h.Name, why)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s / %s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, f.Build.ID, f.Build.GoVersion,
			f.OS, f.Kernel, clip(f.CPUModel, 32), f.Cores, strings.Join(f.Features, ","), f.PanelRows,
			memPair(f), orDash(f.THP), limit(f.NoFile.Soft, false), limit(f.MemLock.Soft, true), load(f.Load1),
			fmt.Sprintf("%+.0fus", f.ClockOffsetUs))
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tIFACE\tSHM\tRDMA")
	for _, h := range r.Hosts {
		f := h.Facts
		if f == nil {
			continue
		}
		iface := orDash(f.Iface)
		if f.IfaceAddr != "" {
			iface += " " + f.IfaceAddr
		}
		if f.IfaceMTU > 0 {
			iface += fmt.Sprintf(" mtu %d", f.IfaceMTU)
		}
		if f.IfaceMbps > 0 {
			iface += fmt.Sprintf(" %d Mb/s", f.IfaceMbps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Name, iface, f.Shm, rdmaSummary(f))
	}
	tw.Flush()

	for _, t := range r.transports() {
		r.writeMatrix(w, t)
	}

	fmt.Fprintln(w)
	for _, c := range r.Checks {
		subj := c.Name
		if c.Subject != "" {
			subj += " " + c.Subject
		}
		fmt.Fprintf(w, "%-4s  %s: %s\n", strings.ToUpper(c.Verdict), subj, c.Detail)
		if c.Fix != "" && c.Verdict != OK {
			fmt.Fprintf(w, "      fix: %s\n", c.Fix)
		}
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", r.Verdict)
	return err
}

func (r *Report) transports() []string {
	var ts []string
	for _, l := range r.Links {
		found := false
		for _, t := range ts {
			found = found || t == l.Transport
		}
		if !found {
			ts = append(ts, l.Transport)
		}
	}
	return ts
}

// writeMatrix prints one transport's links as a matrix: row = sender, column = receiver,
// each cell "latency us / bandwidth MB/s" (latency is the pair's, the same both ways).
func (r *Report) writeMatrix(w io.Writer, t string) {
	names := r.liveNames()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	cell := make([][]string, len(names))
	for i := range cell {
		cell[i] = make([]string, len(names))
		for j := range cell[i] {
			cell[i][j] = "."
		}
		cell[i][i] = "-"
	}
	for _, l := range r.Links {
		if l.Transport != t {
			continue
		}
		a, okA := idx[l.HostA]
		b, okB := idx[l.HostB]
		if !okA || !okB {
			continue
		}
		if l.Err != "" {
			cell[a][b], cell[b][a] = "FAILED", "FAILED"
			continue
		}
		cell[a][b] = fmt.Sprintf("%.1fus %.0fMB/s", l.LatUs, l.BWAB)
		cell[b][a] = fmt.Sprintf("%.1fus %.0fMB/s", l.LatUs, l.BWBA)
	}
	fmt.Fprintf(w, "\n%s links (row sends to column: one-way latency, bandwidth)\n", t)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw)
	for i, n := range names {
		fmt.Fprintf(tw, "%s\t%s\t\n", n, strings.Join(cell[i], "\t"))
	}
	tw.Flush()
}

func rdmaSummary(f *Facts) string {
	var parts []string
	for _, d := range f.RDMA {
		if d.Soft {
			continue
		}
		for _, p := range d.Ports {
			if p.Err != "" {
				parts = append(parts, fmt.Sprintf("%s/%d: %s", d.Name, p.Num, p.Err))
				continue
			}
			ll := 0
			var gids []string
			for _, g := range p.GIDs {
				if g.LinkLocal {
					ll++
				}
				if len(gids) < 4 {
					gids = append(gids, strings.TrimSpace(fmt.Sprintf("[%d] %s %s", g.Index, g.GID, g.Type)))
				}
			}
			if len(p.GIDs) > len(gids) {
				gids = append(gids, fmt.Sprintf("and %d more", len(p.GIDs)-len(gids)))
			}
			s := fmt.Sprintf("%s/%d %s %s mtu %d, GIDs: %s", d.Name, p.Num, p.State, p.LinkLayer, p.MTU, orDash(strings.Join(gids, ", ")))
			if len(p.GIDs) > 0 && ll == len(p.GIDs) {
				s += " (link-local only: Thunderbolt before an IPv4 address; gorun pairs them)"
			}
			parts = append(parts, s)
		}
	}
	switch {
	case f.RDMAError != "":
		return "error: " + f.RDMAError
	case len(parts) > 0:
		return strings.Join(parts, "; ")
	case !f.Verbs:
		return "none visible (this gorun is built without libibverbs: go build -tags verbs)"
	}
	return "no device"
}

func memPair(f *Facts) string {
	if f.MemTotal == 0 {
		return "-"
	}
	avail := "?"
	if f.MemAvailable > 0 {
		avail = fmt.Sprintf("%.1f", float64(f.MemAvailable)/(1<<30))
	}
	return fmt.Sprintf("%s/%.1f GiB", avail, float64(f.MemTotal)/(1<<30))
}

func limit(v int64, isBytes bool) string {
	switch {
	case v == -1:
		return "unlimited"
	case v < 0:
		return "?"
	case isBytes:
		return bytesH(uint64(v))
	}
	return fmt.Sprint(v)
}

func load(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n-1] + "~"
	}
	return orDash(s)
}
