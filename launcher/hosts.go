package launcher

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Host is one machine of a job and how many ranks it takes.
type Host struct {
	Name  string // as given: a name or an address that ssh and the ranks can reach
	Slots int    // ranks it takes before the job oversubscribes it (> 0)
	// MaxSlots caps the ranks placed there even with oversubscription; 0 = no cap.
	MaxSlots int
}

// maxSlots bounds a slot count from a file or the command line.
const maxSlots = 1 << 20

// ParseHostfile reads a hostfile in Open MPI's format ("host slots=4 max_slots=8", '#'
// comments, blank lines) or MPICH's ("host:4"); a host without a count has one slot. A host
// named again adds its slots to the first entry, as in Open MPI. name is used in errors, which
// give file and line.
func ParseHostfile(r io.Reader, name string) ([]Host, error) {
	var hosts []Host
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		h, err := parseHostFields(fields)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		hosts = addHost(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts in the file", name)
	}
	return hosts, nil
}

func parseHostFields(fields []string) (Host, error) {
	h := Host{Name: fields[0], Slots: 1}
	explicit := false
	if name, count, ok := strings.Cut(fields[0], ":"); ok && !strings.Contains(count, ":") {
		// MPICH's host:N (a lone colon; IPv6 addresses have several and take no count)
		n, err := slotCount(count)
		if err != nil {
			return h, fmt.Errorf("host %q: %w", fields[0], err)
		}
		h.Name, h.Slots, explicit = name, n, true
	}
	if err := checkHostName(h.Name); err != nil {
		return h, err
	}
	for _, f := range fields[1:] {
		key, value, ok := strings.Cut(f, "=")
		if !ok {
			return h, fmt.Errorf("host %s: %q is not key=value (want slots=N or max_slots=N)", h.Name, f)
		}
		n, err := slotCount(value)
		if err != nil {
			return h, fmt.Errorf("host %s: %s: %w", h.Name, key, err)
		}
		switch key {
		case "slots", "slot", "count", "cpu":
			if explicit {
				return h, fmt.Errorf("host %s: slots given twice", h.Name)
			}
			h.Slots, explicit = n, true
		case "max_slots", "max-slots":
			h.MaxSlots = n
		default:
			return h, fmt.Errorf("host %s: unknown key %q (want slots=N or max_slots=N)", h.Name, key)
		}
	}
	if h.MaxSlots > 0 && h.Slots > h.MaxSlots {
		return h, fmt.Errorf("host %s: slots=%d exceeds max_slots=%d", h.Name, h.Slots, h.MaxSlots)
	}
	return h, nil
}

func slotCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxSlots {
		return 0, fmt.Errorf("%q is not a slot count from 1 to %d", s, maxSlots)
	}
	return n, nil
}

func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("empty host name")
	}
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("host name %q starts with '-'", name) // ssh would read it as an option
	}
	for _, c := range name {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("'\"`$\\;&|<>(){}*?!", c) {
			return fmt.Errorf("host name %q contains %q", name, c)
		}
	}
	return nil
}

// addHost merges h into hosts: a repeated name adds its slots.
func addHost(hosts []Host, h Host) []Host {
	for i := range hosts {
		if hosts[i].Name == h.Name {
			hosts[i].Slots = min(hosts[i].Slots+h.Slots, maxSlots)
			if hosts[i].MaxSlots > 0 {
				hosts[i].MaxSlots = max(hosts[i].MaxSlots, h.MaxSlots, hosts[i].Slots)
			}
			return hosts
		}
	}
	return append(hosts, h)
}

// ParseHostList reads -H's comma-separated list: "host1:2,host2:2" or "a,b,a" (each mention
// one slot, as in Open MPI).
func ParseHostList(list string) ([]Host, error) {
	var hosts []Host
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("-H %q: empty host name", list)
		}
		h, err := parseHostFields([]string{item})
		if err != nil {
			return nil, fmt.Errorf("-H %q: %w", list, err)
		}
		hosts = addHost(hosts, h)
	}
	return hosts, nil
}

// TotalSlots is the number of ranks the hosts take without oversubscription.
func TotalSlots(hosts []Host) int {
	n := 0
	for _, h := range hosts {
		n += h.Slots
	}
	return n
}

// Map places np ranks on hosts. By slot (mpirun's default) fills each host's slots in turn:
// ranks 0..s1-1 on the first host, and so on. By node deals ranks round-robin, one per host
// with a free slot at a time. Beyond the total slots it is an error unless oversubscribe is
// set; then the extra ranks go round-robin, up to each host's max_slots.
func Map(hosts []Host, np int, byNode, oversubscribe bool) ([]Placement, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("no hosts to place ranks on")
	}
	total := TotalSlots(hosts)
	if np > total && !oversubscribe {
		return nil, fmt.Errorf("%d ranks requested but the hosts have %d slots (%s); use fewer ranks, more slots, or --oversubscribe", np, total, describeHosts(hosts))
	}
	used := make([]int, len(hosts))
	hostOf := make([]int, 0, np)
	if byNode {
		for len(hostOf) < min(np, total) {
			for i, h := range hosts {
				if used[i] < h.Slots && len(hostOf) < np {
					used[i]++
					hostOf = append(hostOf, i)
				}
			}
		}
	} else {
		for i, h := range hosts {
			for s := 0; s < h.Slots && len(hostOf) < np; s++ {
				used[i]++
				hostOf = append(hostOf, i)
			}
		}
	}
	for len(hostOf) < np {
		progress := false
		for i, h := range hosts {
			if len(hostOf) < np && (h.MaxSlots == 0 || used[i] < h.MaxSlots) {
				used[i]++
				hostOf = append(hostOf, i)
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("%d ranks requested but max_slots allows %d (%s)", np, len(hostOf), describeHosts(hosts))
		}
	}
	if !byNode {
		// Oversubscribed ranks were dealt round-robin; keep each host's ranks contiguous.
		sort.Ints(hostOf)
	}
	p := make([]Placement, np)
	local := make([]int, len(hosts))
	for r, i := range hostOf {
		p[r] = Placement{Rank: r, Host: hosts[i].Name, LocalRank: local[i]}
		local[i]++
	}
	for r := range p {
		p[r].LocalSize = local[hostOf[r]]
	}
	return p, nil
}

func describeHosts(hosts []Host) string {
	var parts []string
	for i, h := range hosts {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(hosts)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s:%d", h.Name, h.Slots))
	}
	return strings.Join(parts, ",")
}

// isLocalHost reports whether name is this machine: "localhost", its host name, or a name or
// address that resolves to an address of one of its interfaces. Its ranks start without ssh.
func isLocalHost(name string) bool {
	if name == "localhost" {
		return true
	}
	if hn, err := os.Hostname(); err == nil && (name == hn || strings.SplitN(hn, ".", 2)[0] == name) {
		return true
	}
	var ips []net.IP
	if ip := net.ParseIP(name); ip != nil {
		ips = []net.IP{ip}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, name)
		if err != nil {
			return false
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() {
			return true
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
