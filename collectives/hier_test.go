package collectives

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

// fakeLayouts place p goroutine ranks on hosts in the ways launchers do and users get wrong: by
// slot (consecutive ranks share a host), by node (round robin), uneven, a lone rank, one host,
// and a host per rank.
var fakeLayouts = []struct {
	name string
	host func(r, p int) int
}{
	{"2 hosts by slot", func(r, p int) int { return r * 2 / p }},
	{"2 hosts by node", func(r, p int) int { return r % 2 }},
	{"3 hosts uneven", func(r, p int) int { return r * r * 3 / (p * p) }},
	{"lone last rank", func(r, p int) int { return boolInt(r == p-1) }},
	{"one host", func(r, p int) int { return 0 }},
	{"host per rank", func(r, p int) int { return r }},
}

// withFakeHosts makes every communicator of the test see its world ranks on the hosts host
// gives them. In a multi-process job the hosts are the job's own (GORUN_HOST_ID).
func withFakeHosts(t *testing.T, p int, host func(r, p int) int) {
	if inJob() {
		return
	}
	old := hostIDOf
	hostIDOf = func(c *comm.Comm, r int) string { return fmt.Sprintf("fake%d", host(c.WorldRank(r), p)) }
	t.Cleanup(func() { hostIDOf = old })
}

// eachLayout runs fn under every fake layout (once, under the job's own, in a process job).
func eachLayout(t *testing.T, p int, fn func(t *testing.T, layout string)) {
	for _, l := range fakeLayouts {
		t.Run(fmt.Sprintf("p=%d/%s", p, l.name), func(t *testing.T) {
			withFakeHosts(t, p, l.host)
			fn(t, l.name)
		})
		if inJob() {
			return
		}
	}
}

func TestHostLayout(t *testing.T) {
	for _, tc := range []struct {
		hosts          []int
		shape          hostShape
		local, leaders []int // sizes of this rank's local and leaders communicators (0: nil)
	}{
		{[]int{0, 0, 1, 1}, hierHosts, []int{2, 2, 2, 2}, []int{2, 0, 2, 0}},
		{[]int{0, 1, 0, 2, 1, 0}, hierHosts, []int{3, 2, 3, 1, 2, 3}, []int{3, 3, 0, 3, 0, 0}},
		{[]int{0, 0, 0}, oneHost, []int{3, 3, 3}, []int{0, 0, 0}},
		{[]int{0, 1, 2}, meshHosts, []int{0, 0, 0}, []int{3, 3, 3}},
	} {
		p := len(tc.hosts)
		withFakeHosts(t, p, func(r, p int) int { return tc.hosts[r] })
		run(t, p, func(c *comm.Comm) error {
			sp := spaceOf(c)
			cc := sp.cc
			l := sp.layout
			r := c.Rank()
			local, leaders := l.localComm(cc), l.leaderComm(cc)
			size := func(c *comm.Comm) int {
				if c == nil {
					return 0
				}
				return c.Size()
			}
			if l.err != nil || l.shape != tc.shape || size(local) != tc.local[r] || size(leaders) != tc.leaders[r] {
				return fmt.Errorf("hosts %v rank %d: shape %v, local %d, leaders %d, err %v; want %v %d %d", tc.hosts, r, l.shape, size(local), size(leaders), l.err, tc.shape, tc.local[r], tc.leaders[r])
			}
			if spaceOf(c) != sp || layoutOf(cc) != l {
				return fmt.Errorf("layout not cached")
			}
			// A leader is the lowest rank of its host, its local rank 0.
			if leaders != nil && local != nil && local.Rank() != 0 {
				return fmt.Errorf("rank %d leads with local rank %d", r, local.Rank())
			}
			return nil
		})
	}
}

// TestHierarchical forces the hierarchical allreduce and bcast, and runs the automatic choice
// (which picks them on hierarchical layouts above the small-message threshold), on every fake
// layout against the naive reference.
func TestHierarchical(t *testing.T) {
	for p := 1; p <= 8; p++ {
		eachLayout(t, p, func(t *testing.T, layout string) {
			for _, forced := range []bool{true, false} {
				if forced {
					withTuning(t, func(tu *Tuning) {
						tu.AllreduceAlgorithm, tu.BcastAlgorithm = AlgHierarchical, AlgHierarchical
						tu.ReduceLargeMsg, tu.BcastLargeMsg = 4096, 4096 // both inner algorithms of each kind
					})
				}
				for _, n := range []int{0, 1, 7, 1001, 3*p + 1, 20011} {
					checkAllreduce[float64](t, p, n, "Sum", n%2 == 1)
					checkAllreduce[int32](t, p, n, "Max", false)
					for _, root := range roots(p) {
						run(t, p, func(c *comm.Comm) error {
							buf := make([]int64, n)
							if c.Rank() == root {
								buf = fill[int64](root, n, false)
							}
							if err := Bcast(c, buf, root); err != nil {
								return err
							}
							if err := equal(buf, fill[int64](root, n, false)); err != nil {
								return fmt.Errorf("%s forced=%v p=%d n=%d root=%d: %v", layout, forced, p, n, root, err)
							}
							return nil
						})
					}
				}
			}
		})
	}
}

// TestHierarchicalNonBlocking: the first collective on a fresh communicator with a hierarchical
// layout is non-blocking and overlaps others; the layout's splits must not disturb their order.
func TestHierarchicalNonBlocking(t *testing.T) {
	for _, p := range []int{4, 5} {
		withFakeHosts(t, p, fakeLayouts[1].host)
		run(t, p, func(c *comm.Comm) error {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			n := 5000
			a := make([]float64, n)
			b := make([]int64, n)
			if d.Rank() == p-1 {
				b = fill[int64](3, n, false)
			}
			q1 := Iallreduce(d, fill[float64](d.Rank(), n, false), a, Sum[float64]())
			q2 := Ibcast(d, b, p-1)
			if err := comm.WaitAll(q2, q1); err != nil {
				return err
			}
			if err := equal(a, refReduce[float64]("Sum", 0, p, n)); err != nil {
				return err
			}
			return equal(b, fill[int64](3, n, false))
		})
	}
}

// TestHierarchicalMismatch: ranks that call different collectives first on a hierarchical
// communicator still all get an error (the layout's splits happen in every collective).
func TestHierarchicalMismatch(t *testing.T) {
	withFakeHosts(t, 4, fakeLayouts[0].host)
	run(t, 4, func(c *comm.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if d.Rank() == 1 {
			err = Gather(d, make([]int, 4), nil, 0)
		} else {
			err = Allreduce(d, make([]float64, 1<<12), make([]float64, 1<<12), Sum[float64]())
		}
		if !errors.Is(err, ErrMismatch) {
			return fmt.Errorf("rank %d: want an error wrapping ErrMismatch, got %v", d.Rank(), err)
		}
		return nil
	})
}

// TestLayoutCacheReleases: the per-communicator layout cache does not keep communicators alive
// (a program that duplicates communicators in a loop must not grow without bound).
func TestLayoutCacheReleases(t *testing.T) {
	notInJob(t)
	count := func() int {
		n := 0
		layouts.Range(func(_, _ any) bool { n++; return true })
		spaces.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	before := count()
	for _, layout := range []func(r, p int) int{fakeLayouts[0].host, fakeLayouts[4].host, fakeLayouts[5].host} {
		withFakeHosts(t, 3, layout)
		run(t, 3, func(c *comm.Comm) error {
			for range 50 {
				d, err := c.Dup()
				if err != nil {
					return err
				}
				if err := Barrier(d); err != nil {
					return err
				}
			}
			return nil
		})
	}
	created := count() - before
	for deadline := time.Now().Add(20 * time.Second); count() > before+10; {
		if time.Now().After(deadline) {
			t.Fatalf("%d cached layouts after the communicators were dropped (%d created)", count()-before, created)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
