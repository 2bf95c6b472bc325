package collectives

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Algorithm names, as accepted by the GORUN_COLL_*_ALGORITHM variables.
const (
	AlgAuto              = "auto"
	AlgRecursiveDoubling = "recursive_doubling"
	AlgRabenseifner      = "rabenseifner"
	AlgRing              = "ring"
	AlgBinomial          = "binomial"
	AlgScatterAllgather  = "scatter_allgather"
	AlgReduceScatterGath = "reduce_scatter_gather"
	AlgPairwise          = "pairwise"
	AlgDirect            = "direct"
	AlgHierarchical      = "hierarchical"
)

// Tuning is the one table of algorithm choices and thresholds (in bytes of the whole vector a
// rank contributes; for allgather, of the gathered result). Like Open MPI's coll_tuned, every
// entry can be overridden with an environment variable, read at first use:
//
//	GORUN_COLL_ALLREDUCE_ALGORITHM      auto | recursive_doubling | rabenseifner | ring | direct | hierarchical
//	GORUN_COLL_ALLREDUCE_SMALL_MSG      below: recursive doubling (default 64 KiB for 2-3 ranks, 8 KiB beyond)
//	GORUN_COLL_ALLREDUCE_LARGE_MSG      from: pipelined ring (default 1 MiB); between: Rabenseifner
//	                                    (Rabenseifner only for power-of-two rank counts; ring otherwise)
//	GORUN_COLL_ALLREDUCE_DIRECT_MAX_HOSTS  a communicator of one rank per host, up to this many hosts, uses
//	                                    direct from the small threshold on (every pair exchanges at once
//	                                    over its own link, as in a Thunderbolt full mesh; default 4, 0: off);
//	                                    so do the leaders of a hierarchical allreduce
//	                                    From the small threshold on, a communicator spanning several hosts
//	                                    with several ranks on some host uses hierarchical (inside hosts,
//	                                    then among one leader per host, by this table) before all of these.
//	GORUN_COLL_RING_SEGMENT             pipeline segment of the ring algorithms (default 4 MiB: over TCP every
//	                                    segment pays a rendezvous, and smaller ones measured slower)
//	GORUN_COLL_BCAST_ALGORITHM          auto | recursive_doubling | binomial | scatter_allgather | hierarchical
//	GORUN_COLL_BCAST_SMALL_MSG          up to: recursive doubling inside the argument check (8 KiB)
//	GORUN_COLL_BCAST_LARGE_MSG          from: scatter + allgather (default 512 KiB); between: binomial
//	                                    (above the small threshold, hierarchical where the hosts ask for it)
//	GORUN_COLL_REDUCE_ALGORITHM         auto | binomial | reduce_scatter_gather
//	GORUN_COLL_REDUCE_LARGE_MSG         from: reduce-scatter + gather (default 512 KiB)
//	GORUN_COLL_ALLGATHER_ALGORITHM      auto | recursive_doubling | ring
//	GORUN_COLL_ALLGATHER_LARGE_MSG      from: ring (default 512 KiB); recursive doubling needs 2^k ranks
//	GORUN_COLL_REDUCE_SCATTER_ALGORITHM auto | ring | pairwise (default ring)
//	GORUN_COLL_CHECK                    1 (default): check that ranks' arguments agree; 0: skip
//
// Sizes accept a K, M or G suffix (powers of 1024). Every rank must see the same values.
type Tuning struct {
	AllreduceAlgorithm  string
	AllreduceSmallMsg   int // used when the rank count is 4 or more
	AllreduceSmallMsgLo int // used for 2-3 ranks (GORUN_COLL_ALLREDUCE_SMALL_MSG sets both)
	AllreduceLargeMsg   int
	// AllreduceDirectMaxHosts: one rank per host on up to this many hosts, medium and large
	// vectors use the direct full-mesh algorithm (0: never chosen automatically).
	AllreduceDirectMaxHosts int
	RingSegment             int
	BcastAlgorithm          string
	BcastSmallMsg           int
	BcastLargeMsg           int
	ReduceAlgorithm         string
	ReduceLargeMsg          int
	AllgatherAlgorithm      string
	AllgatherLargeMsg       int
	ReduceScatterAlg        string
	Check                   bool
}

// DefaultTuning is the table before environment overrides. The thresholds follow Open MPI's
// tuned decision rules: recursive doubling until the
// message is bandwidth-bound, then the bandwidth-optimal algorithms.
func DefaultTuning() Tuning {
	return Tuning{
		AllreduceAlgorithm:      AlgAuto,
		AllreduceSmallMsg:       8 << 10,
		AllreduceSmallMsgLo:     64 << 10,
		AllreduceLargeMsg:       1 << 20,
		AllreduceDirectMaxHosts: 4,
		RingSegment:             4 << 20,
		BcastAlgorithm:          AlgAuto,
		BcastSmallMsg:           8 << 10,
		BcastLargeMsg:           512 << 10,
		ReduceAlgorithm:         AlgAuto,
		ReduceLargeMsg:          512 << 10,
		AllgatherAlgorithm:      AlgAuto,
		AllgatherLargeMsg:       512 << 10,
		ReduceScatterAlg:        AlgAuto,
		Check:                   true,
	}
}

var (
	tuningOnce sync.Once
	tuningPtr  atomic.Pointer[Tuning]
	tuningErr  error
)

// CurrentTuning returns the table in force (defaults plus environment overrides). A malformed
// variable is reported by TuningError and otherwise ignored.
func CurrentTuning() Tuning { return *current() }

// TuningError reports the first malformed GORUN_COLL_* variable, if any.
func TuningError() error {
	current()
	return tuningErr
}

// SetTuning replaces the table for the whole process (all communicators); every rank must set
// the same table. Mostly for tests and benchmarks that force one algorithm.
func SetTuning(t Tuning) error {
	if err := t.validate(); err != nil {
		return err
	}
	current()
	tuningPtr.Store(&t)
	return nil
}

func current() *Tuning {
	tuningOnce.Do(func() {
		t, err := TuningFromEnv(os.Getenv)
		tuningErr = err
		tuningPtr.Store(&t)
	})
	return tuningPtr.Load()
}

// TuningFromEnv applies GORUN_COLL_* overrides read through getenv to DefaultTuning. On a
// malformed value it returns the table without that override and the error.
func TuningFromEnv(getenv func(string) string) (Tuning, error) {
	t := DefaultTuning()
	var first error
	fail := func(name, v string, err error) {
		if first == nil {
			first = fmt.Errorf("collectives: %s=%q: %v", name, v, err)
		}
	}
	alg := func(name string, dst *string, allowed ...string) {
		v := strings.ToLower(strings.TrimSpace(getenv(name)))
		if v == "" {
			return
		}
		for _, a := range append([]string{AlgAuto}, allowed...) {
			if v == a {
				*dst = v
				return
			}
		}
		fail(name, v, fmt.Errorf("want one of auto, %s", strings.Join(allowed, ", ")))
	}
	size := func(name string, dst ...*int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := ParseSize(v)
		if err != nil {
			fail(name, v, err)
			return
		}
		for _, d := range dst {
			*d = n
		}
	}
	const p = "GORUN_COLL_"
	alg(p+"ALLREDUCE_ALGORITHM", &t.AllreduceAlgorithm, AlgRecursiveDoubling, AlgRabenseifner, AlgRing, AlgDirect, AlgHierarchical)
	size(p+"ALLREDUCE_SMALL_MSG", &t.AllreduceSmallMsg, &t.AllreduceSmallMsgLo)
	size(p+"ALLREDUCE_LARGE_MSG", &t.AllreduceLargeMsg)
	size(p+"RING_SEGMENT", &t.RingSegment)
	if v := strings.TrimSpace(getenv(p + "ALLREDUCE_DIRECT_MAX_HOSTS")); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			fail(p+"ALLREDUCE_DIRECT_MAX_HOSTS", v, fmt.Errorf("want a host count"))
		} else {
			t.AllreduceDirectMaxHosts = n
		}
	}
	alg(p+"BCAST_ALGORITHM", &t.BcastAlgorithm, AlgRecursiveDoubling, AlgBinomial, AlgScatterAllgather, AlgHierarchical)
	size(p+"BCAST_SMALL_MSG", &t.BcastSmallMsg)
	size(p+"BCAST_LARGE_MSG", &t.BcastLargeMsg)
	alg(p+"REDUCE_ALGORITHM", &t.ReduceAlgorithm, AlgBinomial, AlgReduceScatterGath)
	size(p+"REDUCE_LARGE_MSG", &t.ReduceLargeMsg)
	alg(p+"ALLGATHER_ALGORITHM", &t.AllgatherAlgorithm, AlgRecursiveDoubling, AlgRing)
	size(p+"ALLGATHER_LARGE_MSG", &t.AllgatherLargeMsg)
	alg(p+"REDUCE_SCATTER_ALGORITHM", &t.ReduceScatterAlg, AlgRing, AlgPairwise)
	if v := strings.TrimSpace(getenv(p + "CHECK")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail(p+"CHECK", v, err)
		} else {
			t.Check = b
		}
	}
	if err := t.validate(); err != nil {
		fail(p+"*", "", err)
		return DefaultTuning(), first
	}
	return t, first
}

func (t Tuning) validate() error {
	if t.RingSegment < 64 {
		return fmt.Errorf("collectives: ring segment %d bytes is below 64", t.RingSegment)
	}
	for _, v := range []int{t.AllreduceSmallMsg, t.AllreduceSmallMsgLo, t.AllreduceLargeMsg, t.BcastSmallMsg, t.BcastLargeMsg, t.ReduceLargeMsg, t.AllgatherLargeMsg} {
		if v < 0 {
			return fmt.Errorf("collectives: negative threshold %d", v)
		}
	}
	if t.AllreduceSmallMsg > 64<<20 || t.AllreduceSmallMsgLo > 64<<20 {
		return fmt.Errorf("collectives: allreduce small-message threshold above 64 MiB")
	}
	return nil
}

// ParseSize reads a byte count with an optional K, M or G suffix (powers of 1024; "KiB",
// "MB" and the like are accepted too), as the GORUN_COLL_* thresholds and commbench's sizes are
// written.
func ParseSize(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimSuffix(u, "B")
	u = strings.TrimSuffix(u, "I")
	mult := 1
	if u != "" {
		switch u[len(u)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		}
	}
	if mult != 1 {
		u = u[:len(u)-1]
	}
	n, err := strconv.Atoi(strings.TrimSpace(u))
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size in bytes", s)
	}
	return n * mult, nil
}

// hostShape is what the algorithm table needs to know of a communicator's host layout.
type hostShape int

const (
	oneHost   hostShape = iota // every rank on one host (or nothing known)
	hierHosts                  // several hosts, several ranks on some: hierarchical algorithms
	meshHosts                  // one rank per host, several hosts: the full-mesh algorithm
)

// allreduceAlg picks the allreduce algorithm for a vector of nbytes over p ranks laid out on
// hosts as shape says.
func (t *Tuning) allreduceAlg(nbytes, p int, commute bool, shape hostShape) string {
	alg := t.AllreduceAlgorithm
	if alg == AlgAuto {
		small := t.AllreduceSmallMsg
		if p < 4 {
			small = t.AllreduceSmallMsgLo
		}
		switch {
		case nbytes < small:
			alg = AlgRecursiveDoubling
		case shape == hierHosts:
			alg = AlgHierarchical
		case shape == meshHosts && p <= t.AllreduceDirectMaxHosts:
			alg = AlgDirect
		case nbytes >= t.AllreduceLargeMsg || !isPow2(p):
			alg = AlgRing
		default:
			alg = AlgRabenseifner
		}
	}
	if !commute {
		// Only recursive doubling combines in rank order.
		alg = AlgRecursiveDoubling
	}
	return alg
}

// innerAllreduceAlg is the choice among the leaders (one per host) of a hierarchical allreduce.
func (t *Tuning) innerAllreduceAlg(nbytes, p int) string {
	if t.AllreduceAlgorithm == AlgHierarchical {
		u := *t
		u.AllreduceAlgorithm = AlgAuto
		return u.allreduceAlg(nbytes, p, true, meshHosts)
	}
	return t.allreduceAlg(nbytes, p, true, meshHosts)
}

// fuseLimit is the largest vector recursive doubling carries inside the argument-check messages.
func (t *Tuning) fuseLimit() int { return max(t.AllreduceSmallMsg, t.AllreduceSmallMsgLo) }

func (t *Tuning) bcastAlg(nbytes, p int, shape hostShape) string {
	if t.BcastAlgorithm != AlgAuto {
		return t.BcastAlgorithm
	}
	switch {
	case nbytes <= t.BcastSmallMsg && t.Check:
		// The check needs a recursive-doubling exchange anyway: the data rides along.
		return AlgRecursiveDoubling
	case shape == hierHosts:
		return AlgHierarchical
	}
	return t.sizedBcastAlg(nbytes, p)
}

// innerBcastAlg is the choice for a step of a hierarchical algorithm: flat, no check.
func (t *Tuning) innerBcastAlg(nbytes, p int) string {
	if a := t.BcastAlgorithm; a != AlgAuto && a != AlgHierarchical {
		return a
	}
	return t.sizedBcastAlg(nbytes, p)
}

func (t *Tuning) sizedBcastAlg(nbytes, p int) string {
	if nbytes >= t.BcastLargeMsg && p > 2 {
		return AlgScatterAllgather
	}
	return AlgBinomial
}

func (t *Tuning) reduceAlg(nbytes int, commute bool) string {
	if !commute {
		return AlgBinomial
	}
	if t.ReduceAlgorithm != AlgAuto {
		return t.ReduceAlgorithm
	}
	if nbytes >= t.ReduceLargeMsg {
		return AlgReduceScatterGath
	}
	return AlgBinomial
}

func (t *Tuning) allgatherAlg(totalBytes, p int) string {
	alg := t.AllgatherAlgorithm
	if alg == AlgAuto {
		alg = AlgRing
		if totalBytes < t.AllgatherLargeMsg {
			alg = AlgRecursiveDoubling
		}
	}
	if alg == AlgRecursiveDoubling && !isPow2(p) {
		alg = AlgRing
	}
	return alg
}

func (t *Tuning) reduceScatterAlg() string {
	if t.ReduceScatterAlg == AlgAuto {
		return AlgRing
	}
	return t.ReduceScatterAlg
}

func isPow2(p int) bool { return p > 0 && p&(p-1) == 0 }
