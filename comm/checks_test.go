package comm

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// SPMD checks shared by the in-process tests (inproc and tcp transports) and the real-process
// tests: each runs on every rank and returns an error naming what went wrong.

// messageSizes spans empty, tiny, odd, both sides of the eager limits and several MiB.
var messageSizes = []int{0, 1, 7, 8, 1000, core.LocalEagerLimit - 1, core.LocalEagerLimit, core.LocalEagerLimit + 1, 1 << 20, 5<<20 + 3}

// fill writes a pattern that differs by sender, receiver-visible size and tag.
func fill(b []byte, seed int) {
	x := uint32(seed*2654435761 + 12345)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
}

func expectPattern(b []byte, seed int, what string) error {
	want := make([]byte, len(b))
	fill(want, seed)
	if crc32.ChecksumIEEE(b) != crc32.ChecksumIEEE(want) {
		for i := range b {
			if b[i] != want[i] {
				return fmt.Errorf("%s: byte %d is %#x, want %#x", what, i, b[i], want[i])
			}
		}
	}
	return nil
}

var checks = []struct {
	name string
	fn   func(c *Comm) error
}{
	{"ring", checkRing},
	{"bigring", checkBigRing},
	{"anysource", checkAnySource},
	{"tags", checkTagsOutOfOrder},
	{"ordering", checkNonOvertaking},
	{"nonblocking", checkNonBlocking},
	{"probe", checkProbe},
	{"split", checkSplit},
	{"dup", checkDupIsolation},
	{"value", checkValue},
	{"truncate", checkTruncate},
	{"typed", checkTyped},
}

// checkRing passes a message of every size around the ring, both directions at once.
func checkRing(c *Comm) error {
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	for _, size := range messageSizes {
		out := make([]byte, size)
		fill(out, r*1000+size)
		in := make([]byte, size)
		st, err := Sendrecv(c, out, next, 5, in, prev, 5)
		if err != nil {
			return fmt.Errorf("ring size %d: %w", size, err)
		}
		if st.Source != prev || st.Tag != 5 || st.Count != size {
			return fmt.Errorf("ring size %d: status %+v, want source %d tag 5 count %d", size, st, prev, size)
		}
		if err := expectPattern(in, prev*1000+size, fmt.Sprintf("ring size %d from %d", size, prev)); err != nil {
			return err
		}
	}
	return nil
}

// checkBigRing: every rank sends a message larger than any socket buffer to both neighbours and
// receives both of theirs, all at once, so that the ranks of a cycle must read while their own
// data is still going out.
func checkBigRing(c *Comm) error {
	const size = 24<<20 + 5
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	toNext, toPrev := make([]byte, size), make([]byte, size)
	fill(toNext, r*7+1)
	fill(toPrev, r*7+2)
	fromPrev, fromNext := make([]byte, size), make([]byte, size)
	reqs := []*Request{
		Irecv(c, fromPrev, prev, 21), Irecv(c, fromNext, next, 22),
		Isend(c, toNext, next, 21), Isend(c, toPrev, prev, 22),
	}
	if err := WaitAll(reqs...); err != nil {
		return fmt.Errorf("big ring: %w", err)
	}
	if err := expectPattern(fromPrev, prev*7+1, fmt.Sprintf("big ring from %d", prev)); err != nil {
		return err
	}
	return expectPattern(fromNext, next*7+2, fmt.Sprintf("big ring from %d", next))
}

// checkAnySource: every rank sends to rank 0 (two sizes), which receives with AnySource.
func checkAnySource(c *Comm) error {
	for round, size := range []int{3, 200 << 10} {
		tag := 9 + round
		if c.Rank() != 0 {
			b := make([]byte, size)
			fill(b, c.Rank())
			if err := Send(c, b, 0, tag); err != nil {
				return err
			}
			continue
		}
		seen := make([]bool, c.Size())
		seen[0] = true
		for i := 1; i < c.Size(); i++ {
			b := make([]byte, size)
			st, err := Recv(c, b, AnySource, tag)
			if err != nil {
				return err
			}
			if st.Source <= 0 || st.Source >= c.Size() || seen[st.Source] || st.Tag != tag || st.Count != size {
				return fmt.Errorf("anysource: unexpected status %+v", st)
			}
			seen[st.Source] = true
			if err := expectPattern(b, st.Source, "anysource"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTagsOutOfOrder: rank 0 sends tags 1..3 (small and large) to rank 1, which receives
// them in the opposite order of tags.
func checkTagsOutOfOrder(c *Comm) error {
	if c.Size() < 2 || c.Rank() > 1 {
		return nil
	}
	sizes := map[int]int{1: 10, 2: 300 << 10, 3: 0}
	if c.Rank() == 0 {
		reqs := []*Request{}
		for tag := 1; tag <= 3; tag++ {
			b := make([]byte, sizes[tag])
			fill(b, tag)
			reqs = append(reqs, Isend(c, b, 1, tag))
		}
		return WaitAll(reqs...)
	}
	for tag := 3; tag >= 1; tag-- {
		b := make([]byte, sizes[tag])
		st, err := Recv(c, b, 0, tag)
		if err != nil {
			return err
		}
		if st.Tag != tag || st.Count != sizes[tag] {
			return fmt.Errorf("tags: got %+v for tag %d", st, tag)
		}
		if err := expectPattern(b, tag, "tags"); err != nil {
			return err
		}
	}
	return nil
}

// checkNonOvertaking: a stream of messages of mixed sizes (eager and rendezvous) from each rank
// to the next, with one tag, arrives in the order sent, even received with AnyTag.
func checkNonOvertaking(c *Comm) error {
	n, r := c.Size(), c.Rank()
	if n < 2 {
		return nil
	}
	next, prev := (r+1)%n, (r+n-1)%n
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 60)
	for i := range sizes {
		sizes[i] = rng.IntN(3) * rng.IntN(150<<10)
	}
	reqs := make([]*Request, 0, len(sizes))
	bufs := make([][]byte, len(sizes))
	for i, s := range sizes {
		bufs[i] = make([]byte, s+4)
		fill(bufs[i], i)
		bufs[i][0] = byte(i)
		reqs = append(reqs, Isend(c, bufs[i], next, 11))
	}
	for i, s := range sizes {
		b := make([]byte, 400<<10)
		st, err := Recv(c, b, prev, AnyTag)
		if err != nil {
			return err
		}
		if st.Count != s+4 || b[0] != byte(i) {
			return fmt.Errorf("ordering: message %d arrived as %d bytes with index %d", i, st.Count, b[0])
		}
		b[0] = 0
		want := make([]byte, s+4)
		fill(want, i)
		want[0] = 0
		if crc32.ChecksumIEEE(b[:s+4]) != crc32.ChecksumIEEE(want) {
			return fmt.Errorf("ordering: message %d corrupted", i)
		}
	}
	return WaitAll(reqs...)
}

// checkNonBlocking: receives posted before sends, completed in any order, with Test and WaitAny.
func checkNonBlocking(c *Comm) error {
	n, r := c.Size(), c.Rank()
	recvs := make([]*Request, n)
	bufs := make([][]float64, n)
	for src := 0; src < n; src++ {
		bufs[src] = make([]float64, 1000*(src+1))
		recvs[src] = Irecv(c, bufs[src], src, 21)
	}
	sends := make([]*Request, n)
	for dst := n - 1; dst >= 0; dst-- {
		out := make([]float64, 1000*(r+1))
		for i := range out {
			out[i] = float64(r*1e6 + dst*1e3 + i)
		}
		sends[dst] = Isend(c, out, dst, 21)
	}
	left := n
	for left > 0 {
		i, st, err := WaitAny(recvs...)
		if err != nil {
			return err
		}
		if st.Source != i || Count[float64](st) != 1000*(i+1) {
			return fmt.Errorf("nonblocking: status %+v for request %d", st, i)
		}
		for k, v := range bufs[i] {
			if v != float64(i*1e6+r*1e3+k) {
				return fmt.Errorf("nonblocking: from %d element %d = %v", i, k, v)
			}
		}
		if done, _, _ := recvs[i].Test(); !done {
			return errors.New("nonblocking: Test says a completed request is pending")
		}
		recvs[i] = nil
		left--
	}
	return WaitAll(sends...)
}

// checkProbe: Iprobe sees nothing before the message, Probe reports its size, Recv takes it.
func checkProbe(c *Comm) error {
	if c.Size() < 2 || c.Rank() > 1 {
		return nil
	}
	if c.Rank() == 1 {
		if _, ok, err := c.Iprobe(0, 33); err != nil || ok {
			return fmt.Errorf("probe: Iprobe before any send: ok=%v err=%v", ok, err)
		}
		if err := Send(c, []byte{1}, 0, 34); err != nil { // tell rank 0 to send now
			return err
		}
		for _, want := range []int{777, 100 << 10} {
			st, err := c.Probe(0, 33)
			if err != nil {
				return err
			}
			if st.Count != want || st.Source != 0 || st.Tag != 33 {
				return fmt.Errorf("probe: %+v, want %d bytes", st, want)
			}
			if _, ok, _ := c.Iprobe(AnySource, AnyTag); !ok {
				return errors.New("probe: Iprobe misses a probed message")
			}
			b := make([]byte, st.Count)
			if _, err := Recv(c, b, st.Source, st.Tag); err != nil {
				return err
			}
			if err := expectPattern(b, want, "probe"); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := Recv(c, make([]byte, 1), 1, 34); err != nil {
		return err
	}
	for _, size := range []int{777, 100 << 10} {
		b := make([]byte, size)
		fill(b, size)
		if err := Send(c, b, 1, 33); err != nil {
			return err
		}
	}
	return nil
}

// checkSplit: colors rank%3, keys reverse the order; ranks, sizes and traffic inside each part.
func checkSplit(c *Comm) error {
	n, r := c.Size(), c.Rank()
	sub, err := c.Split(r%3, -r)
	if err != nil {
		return err
	}
	var members []int
	for q := n - 1; q >= 0; q-- {
		if q%3 == r%3 {
			members = append(members, q)
		}
	}
	if sub.Size() != len(members) || members[sub.Rank()] != r {
		return fmt.Errorf("split: rank %d got sub rank %d of %d, want members %v", r, sub.Rank(), sub.Size(), members)
	}
	// A sum around the sub-ring, to prove the message space works with translated ranks.
	val := []int64{int64(r)}
	sum := int64(r)
	tmp := []int64{0}
	for step := 1; step < sub.Size(); step++ {
		if _, err := Sendrecv(sub, val, (sub.Rank()+1)%sub.Size(), 0, tmp, (sub.Rank()+sub.Size()-1)%sub.Size(), 0); err != nil {
			return err
		}
		val[0] = tmp[0]
		sum += tmp[0]
	}
	var want int64
	for _, m := range members {
		want += int64(m)
	}
	if sum != want {
		return fmt.Errorf("split: ring sum %d, want %d", sum, want)
	}
	none, err := c.Split(Undefined, 0)
	if err != nil || none != nil {
		return fmt.Errorf("split: Undefined color gave %v, %v", none, err)
	}
	return nil
}

// checkDupIsolation: the same (source, tag) on a communicator and its duplicate never mix.
func checkDupIsolation(c *Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	if d.Rank() != c.Rank() || d.Size() != c.Size() {
		return errors.New("dup: rank or size differs")
	}
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	a := Isend(c, []int32{1}, next, 0)
	b := Isend(d, []int32{2}, next, 0)
	x := Isend(c.collComm(), []int32{3}, next, 0)
	got := []int32{0}
	for _, want := range []struct {
		comm *Comm
		v    int32
	}{{d, 2}, {c.collComm(), 3}, {c, 1}} {
		if _, err := Recv(want.comm, got, prev, 0); err != nil {
			return err
		}
		if got[0] != want.v {
			return fmt.Errorf("dup: received %d, want %d", got[0], want.v)
		}
	}
	return WaitAll(a, b, x)
}

type control struct {
	Step  int
	Name  string
	Sizes []int
	Opts  map[string]float64
}

func checkValue(c *Comm) error {
	n, r := c.Size(), c.Rank()
	out := control{Step: r, Name: fmt.Sprintf("rank-%d", r), Sizes: []int{r, 2 * r}, Opts: map[string]float64{"lr": 0.5}}
	req := Go(func() error { return c.SendValue(out, (r+1)%n, 3) })
	var in control
	st, err := c.RecvValue(&in, AnySource, 3)
	if err != nil {
		return err
	}
	prev := (r + n - 1) % n
	if st.Source != prev || in.Step != prev || in.Name != fmt.Sprintf("rank-%d", prev) || len(in.Sizes) != 2 || in.Sizes[1] != 2*prev || in.Opts["lr"] != 0.5 {
		return fmt.Errorf("value: got %+v from %d", in, st.Source)
	}
	_, err = req.Wait()
	return err
}

// checkTruncate: a message longer than the buffer is MPI_ERR_TRUNCATE, small or large, and the
// link stays usable afterwards.
func checkTruncate(c *Comm) error {
	if c.Size() < 2 || c.Rank() > 1 {
		return nil
	}
	sizes := []int{100, 300 << 10}
	if c.Rank() == 0 {
		for _, s := range sizes {
			if err := Send(c, make([]byte, s), 1, 4); err != nil {
				return err
			}
		}
		return Send(c, []byte("ok"), 1, 5)
	}
	for _, s := range sizes {
		_, err := Recv(c, make([]byte, 10), 0, 4)
		var te *TruncateError
		if !errors.As(err, &te) || te.Size != s || te.Have != 10 || te.Source != 0 {
			return fmt.Errorf("truncate: %d-byte message into 10 bytes gave %v", s, err)
		}
	}
	b := make([]byte, 2)
	if _, err := Recv(c, b, 0, 5); err != nil || string(b) != "ok" {
		return fmt.Errorf("truncate: link unusable afterwards: %q %v", b, err)
	}
	return nil
}

// checkTyped sends every element type's slice around the ring.
func checkTyped(c *Comm) error {
	n, r := c.Size(), c.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	if err := typedRing(c, next, prev, func(i int) int8 { return int8(i - 50) }); err != nil {
		return err
	}
	if err := typedRing(c, next, prev, func(i int) uint16 { return uint16(i * 3) }); err != nil {
		return err
	}
	if err := typedRing(c, next, prev, func(i int) int { return -i * 1e9 }); err != nil {
		return err
	}
	if err := typedRing(c, next, prev, func(i int) float32 { return float32(i) / 3 }); err != nil {
		return err
	}
	if err := typedRing(c, next, prev, func(i int) complex128 { return complex(float64(i), -1) }); err != nil {
		return err
	}
	return typedRing(c, next, prev, func(i int) uint64 { return uint64(i) << 40 })
}

func typedRing[T Elem](c *Comm, next, prev int, gen func(int) T) error {
	out := make([]T, 5000)
	for i := range out {
		out[i] = gen(i + c.Rank())
	}
	in := make([]T, len(out))
	st, err := Sendrecv(c, out, next, 8, in, prev, 8)
	if err != nil {
		return err
	}
	if Count[T](st) != len(in) {
		return fmt.Errorf("typed %T: count %d", out[0], Count[T](st))
	}
	for i := range in {
		if in[i] != gen(i+prev) {
			return fmt.Errorf("typed %T: element %d = %v, want %v", out[0], i, in[i], gen(i+prev))
		}
	}
	return nil
}
