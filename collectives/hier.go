package collectives

import (
	"fmt"
	"sync"

	"github.com/gorun-hpc/gorun/comm"
)

// Host-aware (hierarchical) algorithms. A communicator spanning several hosts, with several ranks
// on some host, reduces inside each host first (shared memory), runs the inter-host algorithm
// among one leader per host (the network), and broadcasts inside each host: the slow links carry
// each vector once per host instead of once per rank, and a ring's steps over them drop from
// 2(p-1) to 2(h-1) for h hosts.

// hostLayout is how a communicator's ranks sit on hosts, learned once per communicator from
// comm's bootstrap table (no messages) and kept while the communicator lives.
type hostLayout struct {
	hostOf   []int // host index of each rank (hosts numbered by their lowest rank)
	leaderOf []int // leader (lowest rank) of each host
	shape    hostShape
	// split holds, on a hierarchical layout, this host's ranks (by rank) and the leaders (by
	// host index; nil on other ranks); see localComm and leaderComm for the others.
	split struct{ local, leaders *comm.Comm }
	err   error // from the splits; returned by the algorithms that need them
}

// localComm is this rank's host as a communicator: on one host, cc itself, so that a forced
// hierarchical algorithm still runs (nil when every rank has a host of its own). The layout
// never holds cc: the cache would keep the communicator alive.
func (l *hostLayout) localComm(cc *comm.Comm) *comm.Comm {
	switch l.shape {
	case oneHost:
		return cc
	case hierHosts:
		return l.split.local
	}
	return nil
}

// leaderComm is the communicator of host leaders (nil on other ranks, and on one host).
func (l *hostLayout) leaderComm(cc *comm.Comm) *comm.Comm {
	switch l.shape {
	case meshHosts:
		return cc
	case hierHosts:
		return l.split.leaders
	}
	return nil
}

// localRank is rank r's rank inside its host's communicator.
func (l *hostLayout) localRank(r int) int {
	n := 0
	for x := 0; x < r; x++ {
		if l.hostOf[x] == l.hostOf[r] {
			n++
		}
	}
	return n
}

// hostIDOf is where the layout learns rank r's host; tests replace it to fake hosts for
// goroutine ranks.
var hostIDOf = func(c *comm.Comm, r int) string { return c.HostID(r) }

// layouts maps each private communicator (see space) to its layout; the space's clean-up
// removes the entry.
var layouts sync.Map // *comm.Comm -> *hostLayout

func layoutOf(cc *comm.Comm) *hostLayout {
	if sp := recent.byPriv[slot(cc)].Load(); sp != nil && sp.cc == cc {
		return sp.layout
	}
	l, _ := layouts.Load(cc)
	return l.(*hostLayout)
}

func newLayout(cc *comm.Comm) *hostLayout {
	p, r := cc.Size(), cc.Rank()
	l := &hostLayout{hostOf: make([]int, p)}
	index := map[string]int{}
	perHost := []int{}
	for x := range p {
		id := hostIDOf(cc, x)
		h, ok := index[id]
		if !ok {
			h = len(l.leaderOf)
			index[id] = h
			l.leaderOf = append(l.leaderOf, x)
			perHost = append(perHost, 0)
		}
		l.hostOf[x] = h
		perHost[h]++
	}
	hosts := len(l.leaderOf)
	switch {
	case hosts == 1:
		l.shape = oneHost
	case hosts == p:
		l.shape = meshHosts
	default:
		l.shape = hierHosts
		var err error
		if l.split.local, err = cc.Split(l.hostOf[r], r); err != nil {
			l.err = fmt.Errorf("host layout: %w", err)
			return l
		}
		color := comm.Undefined
		if l.leaderOf[l.hostOf[r]] == r {
			color = 0
		}
		if l.split.leaders, err = cc.Split(color, r); err != nil {
			l.err = fmt.Errorf("host layout: %w", err)
		}
	}
	return l
}

// hierAllreduce: reduce to the leader inside each host, allreduce among the leaders (by the
// table, as for any communicator of that size), broadcast inside each host. Commutative ops
// only; every rank gets the leaders' result, so bitwise the same everywhere.
func hierAllreduce[T comm.Elem](cc *comm.Comm, tag int, data []T, op Op[T], t *Tuning) error {
	l := layoutOf(cc)
	if l.err != nil {
		return l.err
	}
	nbytes := len(data) * elemSize[T]()
	lo, lead := l.localComm(cc), l.leaderComm(cc)
	if lo != nil && lo.Size() > 1 {
		local := lo
		var err error
		if t.reduceAlg(nbytes, true) == AlgReduceScatterGath && len(data) >= newFold(local.Size()).pof2*op.unit {
			err = reduceScatterGather(local, tag, data, op, 0)
		} else {
			err = binomialReduce(local, tag, data, op, 0)
		}
		if err != nil {
			return fmt.Errorf("inside the host: %w", err)
		}
	}
	if lead != nil && lead.Size() > 1 {
		lc := lead
		if err := allreduceWith(lc, tag, data, op, t.innerAllreduceAlg(nbytes, lc.Size()), t); err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
	}
	if lo != nil && lo.Size() > 1 {
		if err := bcastWith(lo, tag, data, 0, t.innerBcastAlg(nbytes, lo.Size())); err != nil {
			return fmt.Errorf("inside the host: %w", err)
		}
	}
	return nil
}

// hierBcast: root hands the data to its host's leader, the leaders broadcast it among
// themselves, each leader inside its host.
func hierBcast[T comm.Elem](cc *comm.Comm, tag int, buf []T, root int, t *Tuning) error {
	l := layoutOf(cc)
	if l.err != nil {
		return l.err
	}
	r := cc.Rank()
	nbytes := len(buf) * elemSize[T]()
	rootHost := l.hostOf[root]
	rootLeader := l.leaderOf[rootHost]
	lo, lead := l.localComm(cc), l.leaderComm(cc)
	if root != rootLeader && l.hostOf[r] == rootHost {
		local := lo
		switch r {
		case root:
			if err := sendTo(local, buf, 0, tag); err != nil {
				return fmt.Errorf("to the host leader: %w", err)
			}
		case rootLeader:
			if err := recvExact(local, buf, l.localRank(root), tag); err != nil {
				return fmt.Errorf("from the root: %w", err)
			}
		}
	}
	if lead != nil && lead.Size() > 1 {
		if err := bcastWith(lead, tag, buf, rootHost, t.innerBcastAlg(nbytes, lead.Size())); err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
	}
	if lo != nil && lo.Size() > 1 {
		if err := bcastWith(lo, tag, buf, 0, t.innerBcastAlg(nbytes, lo.Size())); err != nil {
			return fmt.Errorf("inside the host: %w", err)
		}
	}
	return nil
}
