package rma

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// The reference model is a serial simulation: every rank draws the whole job's operation
// sequence from one seed, so every rank knows what every window must hold after each epoch;
// each rank then carries out only the operations it originates. Within an epoch the sequence
// avoids what MPI leaves undefined (a location Put by two origins, or read while written):
// Put epochs give each block of each window to one origin, Accumulate epochs use one
// commutative op, Get epochs only read.

type opKind int

const (
	mPut opKind = iota
	mAcc
	mGet
)

type mop struct {
	kind    opKind
	origin  int
	target  int
	off     int
	vals    []int64 // Put and Accumulate data
	n       int     // Get length
	accName string
}

type epoch struct {
	ops  []mop
	want [][]int64 // every window after the epoch
}

const block = 4

// winLens gives the ranks windows of different lengths (0 included at some counts).
func winLens(p int) []int {
	l := make([]int, p)
	for r := range l {
		l[r] = 3*block + (r*5)%7
		if r == 5 {
			l[r] = 0
		}
	}
	return l
}

var accOps = []string{"Sum", "Max", "Min", "Xor", "Or", "Prod"}

func accOp(name string) collectives.Op[int64] {
	switch name {
	case "Sum":
		return collectives.Sum[int64]()
	case "Max":
		return collectives.Max[int64]()
	case "Min":
		return collectives.Min[int64]()
	case "Xor":
		return collectives.Xor[int64]()
	case "Or":
		return collectives.Or[int64]()
	case "Prod":
		return collectives.Prod[int64]()
	}
	panic(name)
}

// naiveAcc is the element-wise reference of each op.
func naiveAcc(name string, in, cur int64) int64 {
	switch name {
	case "Sum":
		return in + cur
	case "Max":
		return max(in, cur)
	case "Min":
		return min(in, cur)
	case "Xor":
		return in ^ cur
	case "Or":
		return in | cur
	case "Prod":
		return in * cur
	}
	panic(name)
}

// model draws nEpochs epochs for p ranks with windows of lens and simulates them.
func model(seed uint64, p int, lens []int, nEpochs int) (initial [][]int64, eps []epoch) {
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	state := make([][]int64, p)
	for r := range state {
		state[r] = make([]int64, lens[r])
		for i := range state[r] {
			state[r][i] = int64(rng.IntN(9) + 1)
		}
	}
	initial = clone2(state)
	randRange := func(lo, hi int) (int, int) { // a non-empty subrange of [lo, hi)
		a := lo + rng.IntN(hi-lo)
		b := a + 1 + rng.IntN(hi-a)
		return a, b
	}
	for e := range nEpochs {
		var ops []mop
		switch e % 3 {
		case 0: // Put: block b of rank t belongs to origin (b + t + e) % p this epoch
			for t := range p {
				for b := 0; b*block < lens[t]; b++ {
					if rng.IntN(4) == 0 {
						continue
					}
					o := (b + t + e) % p
					lo, hi := randRange(b*block, min((b+1)*block, lens[t]))
					vals := make([]int64, hi-lo)
					for i := range vals {
						vals[i] = int64(rng.IntN(1000)) - 500
					}
					ops = append(ops, mop{kind: mPut, origin: o, target: t, off: lo, vals: vals})
					copy(state[t][lo:], vals)
				}
			}
		case 1: // Accumulate with one op, any origin to any range
			name := accOps[(e/3)%len(accOps)]
			for o := range p {
				for range 1 + rng.IntN(4) {
					t := rng.IntN(p)
					if lens[t] == 0 {
						continue
					}
					lo, hi := randRange(0, lens[t])
					vals := make([]int64, hi-lo)
					for i := range vals {
						vals[i] = int64(rng.IntN(7)) - 3
						if name == "Prod" {
							vals[i] = int64(rng.IntN(3)) - 1 // values stay small
						}
						state[t][lo+i] = naiveAcc(name, vals[i], state[t][lo+i])
					}
					ops = append(ops, mop{kind: mAcc, origin: o, target: t, off: lo, vals: vals, accName: name})
				}
			}
		case 2: // Get: anything, nothing changes
			for o := range p {
				for range 1 + rng.IntN(4) {
					t := rng.IntN(p)
					if lens[t] == 0 {
						continue
					}
					lo, hi := randRange(0, lens[t])
					ops = append(ops, mop{kind: mGet, origin: o, target: t, off: lo, n: hi - lo})
				}
			}
		}
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		eps = append(eps, epoch{ops: ops, want: clone2(state)})
	}
	return initial, eps
}

func clone2(s [][]int64) [][]int64 {
	out := make([][]int64, len(s))
	for i := range s {
		out[i] = slices.Clone(s[i])
	}
	return out
}

// newTestWin makes a window by Create or Allocate holding init.
func newTestWin(c *comm.Comm, how string, init []int64) (*Win[int64], error) {
	if how == "create" {
		return Create(c, slices.Clone(init))
	}
	w, err := Allocate[int64](c, len(init))
	if err != nil {
		return nil, err
	}
	copy(w.Local(), init) // no epoch yet: no other rank accesses it
	return w, nil
}

// runFenceModel replays the model's fence epochs, then a passive-target phase, on c.
func runFenceModel(c *comm.Comm, how string, seed uint64) error {
	p, me := c.Size(), c.Rank()
	lens := winLens(p)
	initial, eps := model(seed, p, lens, 12)
	w, err := newTestWin(c, how, initial[me])
	if err != nil {
		return err
	}
	prev := initial
	for e, ep := range eps {
		if err := w.Fence(); err != nil {
			return fmt.Errorf("epoch %d: %w", e, err)
		}
		if e%3 == 2 {
			// Nobody writes in a Get epoch: this rank's elements are stable.
			if !slices.Equal(w.Local(), prev[me]) {
				return fmt.Errorf("%s: before epoch %d rank %d holds %v, model %v", how, e, me, w.Local(), prev[me])
			}
		}
		for _, op := range ep.ops {
			if op.origin != me {
				continue
			}
			switch op.kind {
			case mPut:
				err = w.Put(op.target, op.off, op.vals)
			case mAcc:
				err = w.Accumulate(op.target, op.off, op.vals, accOp(op.accName))
			case mGet:
				got := make([]int64, op.n)
				if err = w.Get(op.target, op.off, got); err == nil {
					if want := prev[op.target][op.off : op.off+op.n]; !slices.Equal(got, want) {
						return fmt.Errorf("%s epoch %d: Get(%d, %d, %d) = %v, model %v", how, e, op.target, op.off, op.n, got, want)
					}
				}
			}
			if err != nil {
				return fmt.Errorf("epoch %d: %w", e, err)
			}
		}
		prev = ep.want
	}
	// Every window, read whole by every rank.
	if err := w.Fence(); err != nil {
		return err
	}
	for t := range p {
		got := make([]int64, lens[t])
		if err := w.Get(t, 0, got); err != nil {
			return err
		}
		if !slices.Equal(got, prev[t]) {
			return fmt.Errorf("%s: after %d epochs rank %d's window is %v, model %v", how, len(eps), t, got, prev[t])
		}
	}
	if err := w.FenceEnd(); err != nil {
		return err
	}
	if err := passive(c, w, prev, seed); err != nil {
		return err
	}
	return w.Free()
}

// passive checks passive-target epochs: under exclusive locks, read-modify-write increments by
// Get and Put (which lose updates unless the lock excludes); under shared locks, Accumulates.
// The model: element 0 of each rank counts the increments drawn for it, element 1 the sum of
// the accumulated values.
func passive(c *comm.Comm, w *Win[int64], base [][]int64, seed uint64) error {
	p, me := c.Size(), c.Rank()
	rng := rand.New(rand.NewPCG(seed^0x9e37, uint64(p)))
	type step struct {
		origin, target int
		shared         bool
		add            int64
	}
	var steps []step
	incs, adds := make([]int64, p), make([]int64, p)
	for range 6 * p {
		s := step{origin: rng.IntN(p), target: rng.IntN(p), shared: rng.IntN(2) == 0, add: int64(rng.IntN(100))}
		if w.Len(s.target) < 2 {
			continue
		}
		steps = append(steps, s)
		if s.shared {
			adds[s.target] += s.add
		} else {
			incs[s.target]++
		}
	}
	for _, s := range steps {
		if s.origin != me {
			continue
		}
		if s.shared {
			if err := w.Lock(s.target, Shared); err != nil {
				return err
			}
			if err := w.Accumulate(s.target, 1, []int64{s.add}, collectives.Sum[int64]()); err != nil {
				return err
			}
			if err := w.Flush(s.target); err != nil {
				return err
			}
		} else {
			if err := w.Lock(s.target, Exclusive); err != nil {
				return err
			}
			v := make([]int64, 1)
			if err := w.Get(s.target, 0, v); err != nil {
				return err
			}
			v[0]++
			if err := w.Put(s.target, 0, v); err != nil {
				return err
			}
		}
		if err := w.Unlock(s.target); err != nil {
			return err
		}
	}
	if err := w.Fence(); err != nil {
		return err
	}
	for t := range p {
		if w.Len(t) < 2 {
			continue
		}
		got := make([]int64, 2)
		if err := w.Get(t, 0, got); err != nil {
			return err
		}
		want := []int64{base[t][0] + incs[t], base[t][1] + adds[t]}
		if !slices.Equal(got, want) {
			return fmt.Errorf("passive: rank %d's counters are %v, model %v", t, got, want)
		}
	}
	return w.FenceEnd()
}

func TestWindowModel(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, how := range []string{"allocate", "create"} {
			spmd(t, p, func(c *comm.Comm) error {
				for seed := range uint64(3) {
					if err := runFenceModel(c, how, seed); err != nil {
						return fmt.Errorf("seed %d: %w", seed, err)
					}
				}
				return nil
			})
		}
	}
}

// TestWindowModelMessages runs the model with shared segments turned off, so Allocate's
// windows take the message path too.
func TestWindowModelMessages(t *testing.T) {
	notInJob(t)
	t.Setenv(ShmVar, "0")
	for _, p := range []int{2, 5} {
		spmd(t, p, func(c *comm.Comm) error {
			w, err := Allocate[int64](c, 3)
			if err != nil {
				return err
			}
			if p > 1 && (w.Direct((c.Rank()+1)%p) || !w.Direct(c.Rank())) {
				return fmt.Errorf("%s=0: path %s", ShmVar, w.Path())
			}
			if err := w.Free(); err != nil {
				return err
			}
			return runFenceModel(c, "allocate", 7)
		})
	}
}

// TestWindowPaths checks which path each pair takes: Allocate maps one segment per host, so
// every rank of a host is reached directly, and Create reaches only the rank itself so.
func TestWindowPaths(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			wa, err := Allocate[float64](c, 4)
			if err != nil {
				return err
			}
			wc, err := Create(c, make([]float64, 4))
			if err != nil {
				return err
			}
			for r := range p {
				same := c.HostID(r) == c.HostID(c.Rank())
				if wa.Direct(r) != same {
					return fmt.Errorf("Allocate: Direct(%d) = %v, same host %v (%s)", r, wa.Direct(r), same, wa.Path())
				}
				if wc.Direct(r) != (r == c.Rank()) {
					return fmt.Errorf("Create: Direct(%d) = %v", r, wc.Direct(r))
				}
			}
			return errors.Join(wa.Free(), wc.Free())
		})
	}
}

// TestWindowTypes runs float64, int8 and complex128 windows through Put, Accumulate and Get
// (a ring: rank r writes to r+1), against values computed directly.
func TestWindowTypes(t *testing.T) {
	for _, p := range []int{1, 3, 4} {
		spmd(t, p, func(c *comm.Comm) error {
			return errors.Join(
				ringCheck(c, func(i int) float64 { return 2.5 * float64(i) }),
				ringCheck(c, func(i int) int8 { return int8(3 * i) }),
				ringCheck(c, func(i int) complex128 { return complex(float64(i), 2*float64(i)) }))
		})
	}
}

// ringCheck: val(i) must be exact in T, sums of two values included.
func ringCheck[T comm.Elem](c *comm.Comm, val func(int) T) error {
	p, me := c.Size(), c.Rank()
	const n = 5
	w, err := Allocate[T](c, n)
	if err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	right := (me + 1) % p
	src := make([]T, n)
	for i := range src {
		src[i] = val(me + i)
	}
	if err := w.Put(right, 0, src); err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	if err := w.Accumulate(right, 1, src[:3], collectives.Sum[T]()); err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	left := (me + p - 1) % p
	got := make([]T, n)
	if err := w.Get(me, 0, got); err != nil {
		return err
	}
	for i := range got {
		want := val(left + i)
		if i >= 1 && i < 4 {
			want += val(left + i - 1)
		}
		if got[i] != want {
			return fmt.Errorf("%T ring: element %d is %v, want %v", want, i, got[i], want)
		}
	}
	if err := w.FenceEnd(); err != nil {
		return err
	}
	return w.Free()
}

// TestWindowBadArguments: wrong calls fail with an error on the calling rank, the window stays
// usable, and collective calls fail on every rank when one rank's call was wrong.
func TestWindowBadArguments(t *testing.T) {
	for p := 1; p <= 8; p++ {
		spmd(t, p, func(c *comm.Comm) error {
			return badArguments(c)
		})
	}
}

func badArguments(c *comm.Comm) error {
	p, me := c.Size(), c.Rank()
	expect := func(what string, err error, want error) error {
		if err == nil {
			return fmt.Errorf("%s: no error", what)
		}
		if want != nil && !errors.Is(err, want) {
			return fmt.Errorf("%s: %v, want %v", what, err, want)
		}
		return nil
	}
	// Creation: a negative length on rank 0 fails on every rank.
	n := 4
	if me == 0 {
		n = -1
	}
	if _, err := Allocate[int64](c, n); err != nil {
		if me != 0 && !errors.Is(err, ErrOtherRank) {
			return fmt.Errorf("Allocate with rank 0's length -1: %v", err)
		}
	} else {
		return errors.New("Allocate with rank 0's length -1: no error")
	}
	// So does a length past the limit on the last rank.
	n = 4
	if me == p-1 {
		n = maxWinBytes/8 + 1
	}
	if _, err := Allocate[int64](c, n); err == nil {
		return errors.New("Allocate with the last rank's length past the limit: no error")
	}
	// Element types of different sizes fail on every rank.
	var err error
	if me == p-1 {
		_, err = Allocate[int32](c, 4)
	} else {
		_, err = Allocate[int64](c, 4)
	}
	if p > 1 {
		if e := expect("Allocate of int32 on one rank, int64 on others", err, ErrOtherRank); e != nil {
			return e
		}
	} else if err != nil {
		return err
	}

	w, err := Allocate[int64](c, 4)
	if err != nil {
		return err
	}
	one := []int64{1}
	var errs []error
	add := func(what string, err, want error) {
		if e := expect(what, err, want); e != nil {
			errs = append(errs, e)
		}
	}
	add("Put outside an epoch", w.Put(me, 0, one), ErrNoEpoch)
	add("Get outside an epoch", w.Get((me+1)%p, 0, one), ErrNoEpoch)
	add("Unlock of an unlocked rank", w.Unlock(me), nil)
	add("Flush outside an epoch", w.Flush(me), ErrNoEpoch)
	if err := w.Fence(); err != nil {
		return err
	}
	add("Put to rank -1", w.Put(-1, 0, one), nil)
	add("Put to rank p", w.Put(p, 0, one), nil)
	add("Put past the end", w.Put((me+1)%p, 3, []int64{1, 2}), nil)
	add("Put at a negative offset", w.Put(me, -1, one), nil)
	add("Get past the end", w.Get((me+1)%p, 4, one), nil)
	add("Accumulate past the end", w.Accumulate((me+1)%p, 2, make([]int64, 3), collectives.Sum[int64]()), nil)
	add("Accumulate with a user op", w.Accumulate(me, 0, one, collectives.NewOp[int64]("mine", true, func(in, inout []int64) {})), nil)
	add("Accumulate with MaxLoc on an odd length", w.Accumulate(me, 0, make([]int64, 3), collectives.MaxLoc[int64]()), nil)
	_, err = opCode(collectives.And[float64](), 0, 1)
	add("And on floats", err, nil)
	add("Lock inside a fence epoch", w.Lock(me, Exclusive), nil)
	if err := w.FenceEnd(); err != nil {
		return err
	}
	add("Lock type 0", w.Lock(me, LockType(0)), nil)
	add("Lock of rank p", w.Lock(p, Shared), nil)
	// A Fence while rank 0 holds a lock: rank 0 is told why, the others that another rank failed.
	if me == 0 {
		if err := w.Lock(p-1, Shared); err != nil {
			return err
		}
		add("Lock held twice", w.Lock(p-1, Shared), nil)
		add("Fence holding a lock", w.Fence(), nil)
		if err := w.Unlock(p - 1); err != nil {
			return err
		}
	} else {
		add("Fence while rank 0 holds a lock", w.Fence(), ErrOtherRank)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The window still works: a ring of Puts.
	if err := w.Fence(); err != nil {
		return err
	}
	if err := w.Put((me+1)%p, 0, []int64{int64(me + 100)}); err != nil {
		return err
	}
	if err := w.Fence(); err != nil {
		return err
	}
	if got, want := w.Local()[0], int64((me+p-1)%p+100); got != want {
		return fmt.Errorf("after the bad calls: element 0 is %d, want %d", got, want)
	}
	if err := w.Free(); err != nil {
		return err
	}
	add("Put after Free", w.Put(me, 0, one), ErrFreed)
	add("Fence after Free", w.Fence(), ErrFreed)
	return errors.Join(errs...)
}

// TestWindowRefusesBadRequests: a request that does not decode (here raw bytes a rank sends on
// the window's communicator) is dropped by the target's serving goroutine, which goes on
// serving, and reported by the target's Free.
func TestWindowRefusesBadRequests(t *testing.T) {
	for _, p := range []int{2, 3} {
		spmd(t, p, func(c *comm.Comm) error {
			w, err := Create(c, make([]int64, 2)) // Create: the Put below takes the message path too
			if err != nil {
				return err
			}
			if c.Rank() == 1 {
				bad := make([]byte, hdrLen)
				header{kind: kindPut, off: 1, n: 5}.put(bad) // past the end, and no data
				if err := comm.Send(w.Comm(), bad, 0, reqTag); err != nil {
					return err
				}
				if err := comm.Send(w.Comm(), []byte{9, 9}, 0, reqTag); err != nil {
					return err
				}
			}
			if err := w.Fence(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				if err := w.Put(0, 0, []int64{5, 6}); err != nil {
					return err
				}
			}
			if err := w.FenceEnd(); err != nil {
				return err
			}
			if c.Rank() == 0 && !slices.Equal(w.Local(), []int64{5, 6}) {
				return fmt.Errorf("after the bad requests, rank 0 holds %v, want [5 6]", w.Local())
			}
			err = w.Free()
			if c.Rank() == 0 {
				if err == nil {
					return errors.New("Free: the bad requests were not reported")
				}
				return nil
			}
			return err
		})
	}
}

// TestWindowPeerGone: after one rank has left, the others still lock and access each other
// (their serving goroutines go on), and a collective call or an access to the gone rank
// returns an error instead of hanging.
func TestWindowPeerGone(t *testing.T) {
	notInJob(t)
	spmd(t, 3, func(c *comm.Comm) error {
		w, err := Create(c, make([]int64, 2))
		if err != nil {
			return err
		}
		if c.Rank() == 2 {
			return nil // leaves without Free
		}
		other := 1 - c.Rank()
		// Rank 2 leaves at once; wait until comm reports it gone.
		for {
			if err := w.Lock(2, Shared); err != nil {
				break
			}
			if err := w.Unlock(2); err != nil {
				break
			}
		}
		for i := range 20 {
			if err := w.Lock(other, Exclusive); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
			if err := w.Accumulate(other, 0, []int64{1}, collectives.Sum[int64]()); err != nil {
				return err
			}
			if err := w.Unlock(other); err != nil {
				return err
			}
		}
		var pe *comm.PeerError
		if err := w.Fence(); !errors.As(err, &pe) {
			return fmt.Errorf("Fence with rank 2 gone: %v, want a *comm.PeerError", err)
		}
		return nil
	})
}
