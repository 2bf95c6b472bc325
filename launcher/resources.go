package launcher

import (
	"fmt"
	"runtime"
	"syscall"
)

// Oversubscription. Open MPI refuses more ranks than a host has slots (cores, without a
// hostfile) unless --oversubscribe is given; gorun warns instead, once, for this host, and tells
// the ranks of every host whose ranks outnumber its cores (GORUN_OVERSUBSCRIBED=1), so that
// they wait politely and do not take a peer starved of CPU for a dead one.

// localCores is how many CPUs this host runs ranks on: runtime.NumCPU, which on Linux counts
// the CPUs of gorun's affinity mask (taskset), which the ranks inherit.
func localCores() int { return runtime.NumCPU() }

// markOversubscribed sets Oversubscribed on the placements of every host whose ranks outnumber
// its cores: this host's CPUs (cores), a remote host's slots (the cores its hostfile line
// claims; gorun does not ask the host). It returns how many ranks this host got when that is
// more than cores, else 0.
func markOversubscribed(places []Placement, hosts []Host, cores int) int {
	count, capacity := hostLoads(places, hosts, cores)
	for i, p := range places {
		places[i].Oversubscribed = count[p.Host] > capacity[p.Host]
	}
	if count[""] > cores {
		return count[""]
	}
	return 0
}

// localProcs is how many processors a Go program started here gets by default: this host's
// CPUs (the affinity mask), fewer under a cgroup CPU limit (Go 1.25 and later). gorun's own
// default is the ranks' default; where gorun's environment sets GOMAXPROCS, the ranks
// inherit that instead and Procs is not used.
func localProcs() int { return runtime.GOMAXPROCS(0) }

// shareCores sets Procs, each rank's share of its host's processors, on the placements of
// every host with more than one rank: procs for this host (localProcs), a remote host's slots.
func shareCores(places []Placement, hosts []Host, procs int) {
	count, capacity := hostLoads(places, hosts, procs)
	for i, p := range places {
		places[i].Procs = 0
		if n := count[p.Host]; n > 1 {
			places[i].Procs = max(capacity[p.Host]/n, 1)
		}
	}
}

// hostLoads counts the ranks placed on each host ("" is this host) and each host's capacity:
// local for this host, the slots of a remote host's lines (a host named twice has both).
func hostLoads(places []Placement, hosts []Host, local int) (count, capacity map[string]int) {
	count = map[string]int{}
	for _, p := range places {
		count[p.Host]++
	}
	capacity = map[string]int{"": local}
	for _, h := range hosts {
		capacity[h.Name] += h.Slots
	}
	return count, capacity
}

// Open files. gorun holds, per rank, the read ends of its stdout and stderr pipes and their
// duplicates that exitOrder watches, two pidfds (os.Process's and exitOrder's) and, while the
// job bootstraps, the rank's connection to the rendezvous; a remote rank's ssh adds a stdin
// pipe. A rank of a comm program holds a socket per peer and, with shared memory, a segment
// per rank on its host: about two per rank of the job, less than gorun's share, under the same
// hard limit (below), so gorun's check covers the ranks on this host too.
const (
	fdsPerLocalRank  = 7
	fdsPerRemoteRank = 8
	fdsOwn           = 32 // standard streams, the rendezvous listener, epoll, the Go runtime's
)

// checkOpenFiles fails when the job's ranks need more open files in gorun than its limit
// allows, naming both. Go raised gorun's soft limit to one below the hard limit at start
// (syscall's init); gorun does not call setrlimit itself, so that the ranks start with the soft limit gorun was started with
// (os/exec restores it in children: programs that use select(2) rely on it), and Go ranks
// raise theirs at start the same way.
func checkOpenFiles(places []Placement) error {
	need := fdsOwn
	for _, p := range places {
		if p.Host == "" {
			need += fdsPerLocalRank
		} else {
			need += fdsPerRemoteRank
		}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // nothing to check against; the job fails later with the system's error
	}
	if uint64(need) <= uint64(lim.Cur) {
		return nil
	}
	return fmt.Errorf("%d %s need about %d open files in gorun; the limit is %d (ulimit -n; raise the hard limit, ulimit -Hn, or run fewer ranks)",
		len(places), plural(len(places), "rank", "ranks"), need, lim.Cur)
}
