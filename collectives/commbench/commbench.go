// Package commbench measures point-to-point and collective performance the way the OSU
// micro-benchmarks do (osu_latency, osu_bw, osu_bibw, osu_allreduce, ...): warm-up iterations,
// then timed iterations per message size, min/avg/max over ranks. cmd/commbench is its command.
package commbench

import (
	"fmt"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// Tests lists the benchmarks by name.
var Tests = []string{"latency", "bw", "bibw", "allreduce", "bcast", "reduce", "allgather", "alltoall", "barrier"}

// Config selects a test and its sizes and iteration counts. Zero fields take the OSU defaults.
type Config struct {
	Test             string
	MinSize, MaxSize int // bytes per message (per rank for allgather, per peer for alltoall)
	// Sizes run from MinSize (at least 1, or the element size) doubling up to MaxSize.
	Iters, Warmup int // for sizes up to LargeSize
	ItersLarge    int // for sizes above LargeSize
	WarmupLarge   int
	LargeSize     int // OSU's LARGE_MESSAGE_SIZE, 8 KiB
	Window        int // messages in flight per iteration of bw and bibw
}

// Defaults fills zero fields (MinSize excepted: 0 adds a zero-byte row to the point-to-point
// tests, as OSU's): MaxSize 64 MiB (4 MiB for allgather and alltoall, whose
// buffers grow with the rank count), 1000/100 iterations and 200/10 warm-up iterations (small
// /large), a window of 64 for the bandwidth tests.
func (c Config) Defaults() Config {
	if c.MaxSize == 0 {
		c.MaxSize = 64 << 20
		if c.Test == "allgather" || c.Test == "alltoall" {
			c.MaxSize = 4 << 20
		}
	}
	if c.Iters == 0 {
		c.Iters = 1000
	}
	if c.ItersLarge == 0 {
		c.ItersLarge = 100
	}
	if c.Warmup == 0 {
		c.Warmup = 200
	}
	if c.WarmupLarge == 0 {
		c.WarmupLarge = 10
	}
	if c.LargeSize == 0 {
		c.LargeSize = 8 << 10
	}
	if c.Window == 0 {
		c.Window = 64
	}
	return c
}

// Row is one message size's measurement.
type Row struct {
	Size  int     `json:"size"`
	AvgUs float64 `json:"avg_us"` // latency averaged over ranks (p2p: one-way latency)
	MinUs float64 `json:"min_us"`
	MaxUs float64 `json:"max_us"`
	MBps  float64 `json:"mb_per_s"` // bytes / avg latency (bw, bibw: bytes moved / time), 1 MB = 1e6 B
	Iters int     `json:"iterations"`
}

// Result is a whole test's table (complete on rank 0).
type Result struct {
	Test     string    `json:"test"`
	Ranks    int       `json:"ranks"`
	Datatype string    `json:"datatype"`
	Date     time.Time `json:"date"`
	Rows     []Row     `json:"rows"`
}

// Run executes the test on every rank of c (collective) and returns the table, complete on
// rank 0 (other ranks get their own timings).
func Run(c *comm.Comm, cfg Config) (*Result, error) {
	cfg = cfg.Defaults()
	if cfg.MinSize < 0 || cfg.MaxSize < cfg.MinSize {
		return nil, fmt.Errorf("commbench: bad size range %d..%d", cfg.MinSize, cfg.MaxSize)
	}
	b := &bench{c: c, cfg: cfg}
	res := &Result{Test: cfg.Test, Ranks: c.Size(), Datatype: "byte", Date: time.Now().UTC()}
	var err error
	switch cfg.Test {
	case "latency", "bw", "bibw":
		if c.Size() < 2 {
			return nil, fmt.Errorf("commbench: %s needs at least 2 ranks (it uses ranks 0 and 1)", cfg.Test)
		}
		err = b.sizes(res, 1, b.p2p)
	case "allreduce", "reduce":
		res.Datatype = "float32 sum"
		err = b.sizes(res, 4, b.reduction)
	case "bcast", "allgather", "alltoall":
		err = b.sizes(res, 1, b.collective)
	case "barrier":
		res.Datatype = "-"
		err = b.barrier(res)
	default:
		return nil, fmt.Errorf("commbench: unknown test %q (want one of %s)", cfg.Test, strings.Join(Tests, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("commbench: %s: %w", cfg.Test, err)
	}
	return res, nil
}

type bench struct {
	c     *comm.Comm
	cfg   Config
	buf   []byte // send side, allocated once at the largest size and touched before timing
	rbuf  []byte
	fsend []float32
	frecv []float32
}

// sizes runs measure at 0 (if asked), then MinSize, 2*MinSize, ... up to MaxSize (powers of
// two, as OSU), skipping sizes below the element size.
func (b *bench) sizes(res *Result, elem int, measure func(size, iters, warmup int) (Row, error)) error {
	var list []int
	if b.cfg.MinSize == 0 && elem == 1 {
		list = append(list, 0)
	}
	for s := max(b.cfg.MinSize, 1); s <= b.cfg.MaxSize; s *= 2 {
		if s >= elem {
			list = append(list, s)
		}
	}
	if err := b.alloc(); err != nil {
		return err
	}
	for _, s := range list {
		iters, warm := b.cfg.Iters, b.cfg.Warmup
		if s > b.cfg.LargeSize {
			iters, warm = b.cfg.ItersLarge, b.cfg.WarmupLarge
		}
		if err := collectives.Barrier(b.c); err != nil {
			return err
		}
		row, err := measure(s, iters, warm)
		if err != nil {
			return fmt.Errorf("size %d: %w", s, err)
		}
		res.Rows = append(res.Rows, row)
	}
	return nil
}

func (b *bench) alloc() error {
	p := b.c.Size()
	n := b.cfg.MaxSize
	rn := n
	switch b.cfg.Test {
	case "allgather":
		rn = n * p
	case "alltoall":
		n, rn = n*p, n*p
	case "bw", "bibw":
		n, rn = n*b.cfg.Window, n*b.cfg.Window
		if n > 1<<30 {
			return fmt.Errorf("window x max size = %d bytes: lower --max-size or --window", n)
		}
	}
	b.buf = make([]byte, n)
	b.rbuf = make([]byte, rn)
	for i := range b.buf { // first touch now, not inside the timed loop
		b.buf[i] = byte(i)
	}
	clear(b.rbuf)
	if b.cfg.Test == "allreduce" || b.cfg.Test == "reduce" {
		b.fsend = make([]float32, n/4+1)
		b.frecv = make([]float32, n/4+1)
		for i := range b.fsend {
			b.fsend[i] = float32(i % 1000)
		}
		clear(b.frecv)
	}
	return nil
}

// timeIters runs op warmup times, then iters times with a barrier after each (as OSU's
// collective tests), and summarises the per-rank mean over ranks at rank 0.
func (b *bench) timeIters(size, iters, warmup int, op func() error) (Row, error) {
	for range warmup {
		if err := op(); err != nil {
			return Row{}, err
		}
	}
	if err := collectives.Barrier(b.c); err != nil {
		return Row{}, err
	}
	var total time.Duration
	for range iters {
		t0 := time.Now()
		if err := op(); err != nil {
			return Row{}, err
		}
		total += time.Since(t0)
		if err := collectives.Barrier(b.c); err != nil {
			return Row{}, err
		}
	}
	us := total.Seconds() * 1e6 / float64(iters)
	return b.summarise(size, iters, us)
}

func (b *bench) summarise(size, iters int, us float64) (Row, error) {
	mine := []float64{us}
	lo, hi, sum := make([]float64, 1), make([]float64, 1), make([]float64, 1)
	if err := collectives.Reduce(b.c, mine, lo, collectives.Min[float64](), 0); err != nil {
		return Row{}, err
	}
	if err := collectives.Reduce(b.c, mine, hi, collectives.Max[float64](), 0); err != nil {
		return Row{}, err
	}
	if err := collectives.Reduce(b.c, mine, sum, collectives.Sum[float64](), 0); err != nil {
		return Row{}, err
	}
	if b.c.Rank() != 0 {
		lo[0], hi[0], sum[0] = us, us, us*float64(b.c.Size())
	}
	avg := sum[0] / float64(b.c.Size())
	row := Row{Size: size, AvgUs: avg, MinUs: lo[0], MaxUs: hi[0], Iters: iters}
	if avg > 0 {
		row.MBps = float64(size) / avg
	}
	return row, nil
}

func (b *bench) reduction(size, iters, warmup int) (Row, error) {
	n := size / 4
	s, r := b.fsend[:n], b.frecv[:n]
	op := collectives.Sum[float32]()
	if b.cfg.Test == "reduce" {
		return b.timeIters(size, iters, warmup, func() error { return collectives.Reduce(b.c, s, r, op, 0) })
	}
	return b.timeIters(size, iters, warmup, func() error { return collectives.Allreduce(b.c, s, r, op) })
}

func (b *bench) collective(size, iters, warmup int) (Row, error) {
	p := b.c.Size()
	switch b.cfg.Test {
	case "bcast":
		buf := b.buf[:size]
		return b.timeIters(size, iters, warmup, func() error { return collectives.Bcast(b.c, buf, 0) })
	case "allgather":
		s, r := b.buf[:size], b.rbuf[:size*p]
		return b.timeIters(size, iters, warmup, func() error { return collectives.Allgather(b.c, s, r) })
	default: // alltoall
		s, r := b.buf[:size*p], b.rbuf[:size*p]
		return b.timeIters(size, iters, warmup, func() error { return collectives.Alltoall(b.c, s, r) })
	}
}

func (b *bench) barrier(res *Result) error {
	op := func() error { return collectives.Barrier(b.c) }
	iters, warm := b.cfg.Iters, b.cfg.Warmup
	for range warm {
		if err := op(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	for range iters {
		if err := op(); err != nil {
			return err
		}
	}
	row, err := b.summarise(0, iters, time.Since(t0).Seconds()*1e6/float64(iters))
	res.Rows = append(res.Rows, row)
	return err
}

// p2p runs the ping-pong (latency) and windowed streaming (bw, bibw) tests between ranks 0
// and 1, as osu_latency, osu_bw and osu_bibw; other ranks wait.
func (b *bench) p2p(size, iters, warmup int) (Row, error) {
	r := b.c.Rank()
	const tag = 1
	var elapsed time.Duration
	var err error
	if r <= 1 {
		peer := 1 - r
		var once func() error
		switch b.cfg.Test {
		case "latency":
			s, rb := b.buf[:size], b.rbuf[:size]
			once = func() error {
				if r == 0 {
					if err := comm.Send(b.c, s, peer, tag); err != nil {
						return err
					}
					_, err := comm.Recv(b.c, rb, peer, tag)
					return err
				}
				if _, err := comm.Recv(b.c, rb, peer, tag); err != nil {
					return err
				}
				return comm.Send(b.c, s, peer, tag)
			}
		default:
			once = b.window(size, r, peer, tag)
		}
		for range warmup {
			if err = once(); err != nil {
				break
			}
		}
		t0 := time.Now()
		for i := 0; i < iters && err == nil; i++ {
			err = once()
		}
		elapsed = time.Since(t0)
	}
	if berr := collectives.Barrier(b.c); err == nil {
		err = berr
	}
	if err != nil {
		return Row{}, err
	}
	// Rank 0's measurement is the result (as OSU prints).
	vals := []float64{elapsed.Seconds()}
	if err := collectives.Bcast(b.c, vals, 0); err != nil {
		return Row{}, err
	}
	secs := vals[0]
	row := Row{Size: size, Iters: iters}
	switch b.cfg.Test {
	case "latency":
		row.AvgUs = secs * 1e6 / float64(2*iters)
		if row.AvgUs > 0 {
			row.MBps = float64(size) / row.AvgUs
		}
	case "bw":
		row.AvgUs = secs * 1e6 / float64(iters*b.cfg.Window)
		row.MBps = float64(size) * float64(iters*b.cfg.Window) / secs / 1e6
	case "bibw":
		row.AvgUs = secs * 1e6 / float64(iters*b.cfg.Window)
		row.MBps = 2 * float64(size) * float64(iters*b.cfg.Window) / secs / 1e6
	}
	row.MinUs, row.MaxUs = row.AvgUs, row.AvgUs
	return row, nil
}

// window returns one iteration of osu_bw (rank 0 streams a window of messages, rank 1
// acknowledges) or osu_bibw (both stream at once, then exchange acknowledgements).
func (b *bench) window(size, r, peer, tag int) func() error {
	w := b.cfg.Window
	reqs := make([]*comm.Request, 0, 2*w)
	ack := make([]byte, 4)
	return func() error {
		reqs = reqs[:0]
		sending := b.cfg.Test == "bibw" || r == 0
		receiving := b.cfg.Test == "bibw" || r == 1
		for i := range w {
			if receiving {
				reqs = append(reqs, comm.Irecv(b.c, b.rbuf[i*size:(i+1)*size], peer, tag))
			}
			if sending {
				reqs = append(reqs, comm.Isend(b.c, b.buf[i*size:(i+1)*size], peer, tag))
			}
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		if b.cfg.Test == "bibw" {
			_, err := comm.Sendrecv(b.c, ack, peer, tag+1, ack, peer, tag+1)
			return err
		}
		if r == 0 {
			_, err := comm.Recv(b.c, ack, peer, tag+1)
			return err
		}
		return comm.Send(b.c, ack, peer, tag+1)
	}
}

// ParseSize reads a byte count with an optional K, M or G suffix (see collectives.ParseSize).
func ParseSize(s string) (int, error) { return collectives.ParseSize(s) }
