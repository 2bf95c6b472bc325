package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

// Every case gives one rank (the last, or rank 1) arguments that disagree with the others'; every
// rank must return an error, and none may hang (run's watchdog).
func TestBadInputErrorsEverywhere(t *testing.T) {
	cases := []struct {
		name string
		fn   func(c *comm.Comm) error
	}{
		{"allreduce length, small", func(c *comm.Comm) error {
			n := 10 + boolInt(c.Rank() == c.Size()-1)
			return Allreduce(c, make([]float64, n), make([]float64, n), Sum[float64]())
		}},
		{"allreduce length, small vs large", func(c *comm.Comm) error {
			n := 10
			if c.Rank() == 1 {
				n = 1 << 18 // would pick the ring
			}
			return Allreduce(c, make([]float32, n), make([]float32, n), Sum[float32]())
		}},
		{"allreduce length, large", func(c *comm.Comm) error {
			n := 1<<18 + boolInt(c.Rank() == 0)
			return Allreduce(c, make([]float32, n), make([]float32, n), Sum[float32]())
		}},
		{"allreduce send/recv lengths", func(c *comm.Comm) error {
			m := 0
			if c.Rank() == 1 {
				m = 1
			}
			return Allreduce(c, make([]int, 8), make([]int, 8+m), Sum[int]())
		}},
		{"allreduce op differs", func(c *comm.Comm) error {
			op := Sum[int]()
			if c.Rank() == 1 {
				op = Max[int]()
			}
			return Allreduce(c, make([]int, 4), make([]int, 4), op)
		}},
		{"allreduce op undefined for type", func(c *comm.Comm) error {
			return Allreduce(c, make([]float64, 4), make([]float64, 4), And[float64]())
		}},
		{"allreduce min on complex", func(c *comm.Comm) error {
			return Allreduce(c, make([]complex64, 4), make([]complex64, 4), Min[complex64]())
		}},
		{"allreduce zero op", func(c *comm.Comm) error {
			return Allreduce(c, make([]int, 4), make([]int, 4), Op[int]{})
		}},
		{"maxloc odd length", func(c *comm.Comm) error {
			return Allreduce(c, make([]float64, 3), make([]float64, 3), MaxLoc[float64]())
		}},
		{"allreduce type differs", func(c *comm.Comm) error {
			if c.Rank() == 1 {
				return Allreduce(c, make([]int64, 4), make([]int64, 4), Sum[int64]())
			}
			return Allreduce(c, make([]float64, 4), make([]float64, 4), Sum[float64]())
		}},
		{"bcast root out of range", func(c *comm.Comm) error {
			return Bcast(c, make([]byte, 4), c.Size())
		}},
		{"bcast root differs", func(c *comm.Comm) error {
			return Bcast(c, make([]byte, 4), boolInt(c.Rank() == 1))
		}},
		{"bcast length, small", func(c *comm.Comm) error {
			return Bcast(c, make([]byte, 4+boolInt(c.Rank() == 1)), 0)
		}},
		{"bcast length, small vs large", func(c *comm.Comm) error {
			n := 4
			if c.Rank() == c.Size()-1 {
				n = 1 << 20
			}
			return Bcast(c, make([]float64, n), 0)
		}},
		{"bcast length", func(c *comm.Comm) error {
			return Bcast(c, make([]byte, 1<<20+boolInt(c.Rank() == 1)), 0)
		}},
		{"reduce length", func(c *comm.Comm) error {
			n := 100 + boolInt(c.Rank() == 1)
			return Reduce(c, make([]int, n), make([]int, n), Sum[int](), 0)
		}},
		{"reduce root recv length", func(c *comm.Comm) error {
			return Reduce(c, make([]int, 5), make([]int, 4), Sum[int](), 0)
		}},
		{"allgather length", func(c *comm.Comm) error {
			n := 3 + boolInt(c.Rank() == 1)
			return Allgather(c, make([]int, n), make([]int, n*c.Size()))
		}},
		{"gather recv too small", func(c *comm.Comm) error {
			return Gather(c, make([]int, 3), make([]int, 3), 0)
		}},
		{"scatter length", func(c *comm.Comm) error {
			n := 3 + boolInt(c.Rank() == 1)
			return Scatter(c, make([]int, 3*c.Size()), make([]int, n), 0)
		}},
		{"gatherv count mismatch", func(c *comm.Comm) error {
			counts := make([]int, c.Size())
			for i := range counts {
				counts[i] = 2
			}
			n := 2 + boolInt(c.Rank() == 1) // rank 1 sends one more than root expects
			return Gatherv(c, make([]int, n), make([]int, 2*c.Size()), counts, nil, 0)
		}},
		{"gatherv short", func(c *comm.Comm) error {
			counts := make([]int, c.Size())
			for i := range counts {
				counts[i] = 2
			}
			n := 2 - boolInt(c.Rank() == 1)
			return Gatherv(c, make([]int, n), make([]int, 2*c.Size()), counts, nil, 0)
		}},
		{"scatterv count mismatch", func(c *comm.Comm) error {
			counts := make([]int, c.Size())
			for i := range counts {
				counts[i] = 2
			}
			return Scatterv(c, make([]int, 2*c.Size()), counts, nil, make([]int, 2+boolInt(c.Rank() == 1)), 0)
		}},
		{"alltoallv count mismatch", func(c *comm.Comm) error {
			p := c.Size()
			sc, rc := make([]int, p), make([]int, p)
			for i := range sc {
				sc[i], rc[i] = 1, 1
			}
			if c.Rank() == 1 {
				sc[0] = 2 // rank 0 expects 1
			}
			return Alltoallv(c, make([]int, 2*p), sc, nil, make([]int, p), rc, nil)
		}},
		{"reduce-scatter counts differ", func(c *comm.Comm) error {
			counts := make([]int, c.Size())
			for i := range counts {
				counts[i] = 2 + boolInt(c.Rank() == 1 && i == 0)
			}
			total := 0
			for _, x := range counts {
				total += x
			}
			return ReduceScatter(c, make([]int, total), make([]int, counts[c.Rank()]), counts, Sum[int]())
		}},
		{"alltoall length", func(c *comm.Comm) error {
			n := c.Size() * (2 + boolInt(c.Rank() == 1))
			return Alltoall(c, make([]int, n), make([]int, n))
		}},
		{"scan length", func(c *comm.Comm) error {
			n := 2 + boolInt(c.Rank() == 1)
			return Scan(c, make([]int, n), make([]int, n), Sum[int]())
		}},
		{"different collectives", func(c *comm.Comm) error {
			if c.Rank() == 1 {
				return Bcast(c, make([]int, 4), 0)
			}
			return Allreduce(c, make([]int, 4), make([]int, 4), Sum[int]())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []int{2, 3, 4, 5, 7} {
				expectAllFail(t, p, tc.fn)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestMismatchMessage checks the error names the ranks and counts that disagree, also when
// one rank's vector is large enough for another algorithm.
func TestMismatchMessage(t *testing.T) {
	for _, big := range []int{12, 1 << 20} {
		for _, p := range []int{3, 4} {
			run(t, p, func(c *comm.Comm) error {
				n := 8
				if c.Rank() == 2 {
					n = big
				}
				err := Allreduce(c, make([]int, n), make([]int, n), Sum[int]())
				if !errors.Is(err, ErrMismatch) {
					return fmt.Errorf("%v does not wrap ErrMismatch", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("rank 2 passed %d elements", big)) || !strings.Contains(err.Error(), "passed 8") {
					return fmt.Errorf("p=%d: unhelpful message %q", p, err)
				}
				return nil
			})
		}
	}
}

// TestOneRankFails: a collective with a rank that has returned fails on the others instead of
// hanging.
func TestPeerGone(t *testing.T) {
	notInJob(t) // a process that leaves exits: comm's own process tests cover that
	err := runTimeout(4, func(c *comm.Comm) error {
		if c.Rank() == 2 {
			return errors.New("rank 2 leaves early")
		}
		return Allreduce(c, make([]float64, 1<<16), make([]float64, 1<<16), Sum[float64]())
	})
	if err == nil || strings.Contains(err.Error(), "hang") {
		t.Fatalf("want the early rank's error, got %v", err)
	}
}

func TestTuningFromEnv(t *testing.T) {
	env := map[string]string{
		"GORUN_COLL_ALLREDUCE_ALGORITHM": "Ring",
		"GORUN_COLL_ALLREDUCE_SMALL_MSG": "16K",
		"GORUN_COLL_ALLREDUCE_LARGE_MSG": "4MiB",
		"GORUN_COLL_BCAST_ALGORITHM":     "scatter_allgather",
		"GORUN_COLL_CHECK":               "0",
		"GORUN_COLL_RING_SEGMENT":        "65536",
	}
	tu, err := TuningFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tu.AllreduceAlgorithm != AlgRing || tu.AllreduceSmallMsg != 16<<10 || tu.AllreduceSmallMsgLo != 16<<10 ||
		tu.AllreduceLargeMsg != 4<<20 || tu.BcastAlgorithm != AlgScatterAllgather || tu.Check || tu.RingSegment != 65536 {
		t.Fatalf("parsed %+v", tu)
	}
	for k, v := range map[string]string{
		"GORUN_COLL_ALLREDUCE_ALGORITHM": "fastest",
		"GORUN_COLL_BCAST_LARGE_MSG":     "12Q",
		"GORUN_COLL_CHECK":               "maybe",
		"GORUN_COLL_RING_SEGMENT":        "8",
	} {
		tu, err := TuningFromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), k[:len("GORUN_COLL_")]) {
			t.Errorf("%s=%s: want an error naming the variable, got %v", k, v, err)
		}
		if tu.RingSegment < 64 {
			t.Errorf("%s=%s: bad value applied", k, v)
		}
	}
}

func TestAlgorithmSelection(t *testing.T) {
	d := DefaultTuning()
	// Over hosts with several ranks on some, hierarchical from the small threshold on; one rank
	// on each of up to 4 hosts, direct (commutative ops only, both).
	for _, tc := range []struct {
		nbytes, p int
		commute   bool
		shape     hostShape
		want      string
	}{
		{8, 2, true, oneHost, AlgRecursiveDoubling},
		{32 << 10, 2, true, oneHost, AlgRecursiveDoubling},
		{32 << 10, 4, true, oneHost, AlgRabenseifner},
		{32 << 10, 6, true, oneHost, AlgRing},
		{16 << 20, 4, true, oneHost, AlgRing},
		{16 << 20, 4, false, oneHost, AlgRecursiveDoubling},
		{8, 4, true, hierHosts, AlgRecursiveDoubling},
		{32 << 10, 4, true, hierHosts, AlgHierarchical},
		{16 << 20, 6, true, hierHosts, AlgHierarchical},
		{16 << 20, 6, false, hierHosts, AlgRecursiveDoubling},
		{1 << 20, 4, true, meshHosts, AlgDirect},
		{1 << 20, 5, true, meshHosts, AlgRing},
		{8, 4, true, meshHosts, AlgRecursiveDoubling},
	} {
		if got := d.allreduceAlg(tc.nbytes, tc.p, tc.commute, tc.shape); got != tc.want {
			t.Errorf("allreduce %d bytes on %d ranks (host shape %v): %s, want %s", tc.nbytes, tc.p, tc.shape, got, tc.want)
		}
	}
	forced := d
	forced.AllreduceAlgorithm, forced.BcastAlgorithm = AlgHierarchical, AlgHierarchical
	if forced.innerAllreduceAlg(16<<20, 4) != AlgDirect || forced.innerAllreduceAlg(16<<20, 5) != AlgRing || forced.innerBcastAlg(1<<20, 4) != AlgScatterAllgather {
		t.Error("forced hierarchical: the steps inside must use the flat table")
	}
	if d.bcastAlg(8, 4, oneHost) != AlgRecursiveDoubling || d.bcastAlg(64<<10, 4, oneHost) != AlgBinomial || d.bcastAlg(1<<20, 4, meshHosts) != AlgScatterAllgather {
		t.Error("bcast choice")
	}
	if d.bcastAlg(8, 4, hierHosts) != AlgRecursiveDoubling || d.bcastAlg(64<<10, 4, hierHosts) != AlgHierarchical {
		t.Error("bcast choice on a hierarchical layout")
	}
	if d.allgatherAlg(100, 6) != AlgRing || d.allgatherAlg(100, 8) != AlgRecursiveDoubling {
		t.Error("allgather choice")
	}
}

// TestCheckDisabled: with the check off, good input still works on every algorithm.
func TestCheckDisabled(t *testing.T) {
	withTuning(t, func(tu *Tuning) { tu.Check = false })
	for _, alg := range allreduceAlgs {
		withTuning(t, func(tu *Tuning) { tu.AllreduceAlgorithm = alg })
		for _, p := range []int{1, 3, 4} {
			checkAllreduce[int64](t, p, 777, "Sum", false)
		}
	}
	run(t, 3, func(c *comm.Comm) error {
		b := make([]int, 5)
		if c.Rank() == 0 {
			b[4] = 9
		}
		if err := Bcast(c, b, 0); err != nil {
			return err
		}
		return equal(b, []int{0, 0, 0, 0, 9})
	})
}

func TestOpApply(t *testing.T) {
	a, b := []float64{1, 2}, []float64{3, 4}
	if err := Sum[float64]().Apply(a, b); err != nil || b[0] != 4 || b[1] != 6 {
		t.Fatal(b, err)
	}
	if err := Xor[float64]().Apply(a, b); err == nil || !strings.Contains(err.Error(), "Xor") {
		t.Fatal("Xor on float64 applied")
	}
	if Sum[Float16]().Err() != nil || And[BFloat16]().Err() == nil {
		t.Fatal("half op validity")
	}
	if !Sum[int]().Commutative() || matOp.Commutative() || matOp.Name() != "mat2mul" {
		t.Fatal("op metadata")
	}
	type celsius float64 // named types use their underlying type's kernels
	x, y := []celsius{1.5}, []celsius{2}
	if err := Max[celsius]().Apply(x, y); err != nil || y[0] != 2 {
		t.Fatal(y, err)
	}
}
