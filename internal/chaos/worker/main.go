// Command worker is the chaos suite's workload: every rank runs collectives and point-to-point
// exchanges over int64 vectors (small, eager and large sizes) until rank 0's clock says stop,
// and checks every element of every result against its closed form. A wrong element is
// reported (MISMATCH) and the rank exits 3; a communication error exits 1. Rank 0 prints one
// line when the job is ready (after the first iteration), one per iteration with --stop-file,
// and one when it ends correct:
//
//	gorun -n 4 worker --duration 5s
//	gorun -n 4 worker --stall-rank 2 --stall-iter 3 --stall-for 4s   # a rank that stops receiving
//
// The suite's driver (internal/chaos/cmd/chaos) starts it and injects faults.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

// errMismatch marks a result that is not its closed form.
var errMismatch = errors.New("MISMATCH")

type config struct {
	duration  time.Duration
	stopFile  string
	stallRank int
	stallIter int
	stallFor  time.Duration
	floodMsgs int
	floodLen  int
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long rank 0 keeps the iterations going")
	flag.StringVar(&cfg.stopFile, "stop-file", "", "rank 0 also stops the iterations once this file exists")
	flag.IntVar(&cfg.stallRank, "stall-rank", -1, "rank that stops receiving while the others send it a flood")
	flag.IntVar(&cfg.stallIter, "stall-iter", 2, "iteration at which the flood is sent")
	flag.DurationVar(&cfg.stallFor, "stall-for", 0, "how long the stalled rank waits before it receives")
	flag.IntVar(&cfg.floodMsgs, "flood-msgs", 64, "messages each other rank sends the stalled one")
	flag.IntVar(&cfg.floodLen, "flood-len", 8192, "int64 elements per flood message")
	flag.Parse()
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos-worker:", err)
		os.Exit(1)
	}
	host, _ := os.Hostname()
	fmt.Printf("chaos-worker: rank %d pid %d host %s job %s\n", c.Rank(), os.Getpid(), host, jobID())
	iters, checks, err := run(c, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos-worker: rank %d: iteration %d: %v\n", c.Rank(), iters, err)
		if errors.Is(err, errMismatch) {
			os.Exit(3)
		}
		os.Exit(1)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "chaos-worker: rank %d: finalize: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("chaos-worker: %d iterations, %d elements checked on rank 0: correct\n", iters, checks)
	}
}

// sizes are the vector lengths the iterations cycle through: one element, an eager message,
// and one that goes by rendezvous (800 kB).
var sizes = []int{1, 1000, 100_000}

func run(c *comm.Comm, cfg config) (iter int, checks int64, err error) {
	rank, size := c.Rank(), c.Size()
	start := time.Now()
	ctl := make([]int64, 2)
	for iter = 0; ; iter++ {
		// Rank 0 decides when to stop and says so in the iteration's first broadcast.
		ctl[0], ctl[1] = int64(iter), 0
		if rank == 0 && time.Since(start) >= cfg.duration {
			ctl[1] = 1
		}
		if rank == 0 && cfg.stopFile != "" {
			if _, err := os.Stat(cfg.stopFile); err == nil {
				ctl[1] = 1
			}
		}
		if err := collectives.Bcast(c, ctl, 0); err != nil {
			return iter, checks, fmt.Errorf("bcast control: %w", err)
		}
		if ctl[0] != int64(iter) {
			return iter, checks, fmt.Errorf("%w: control broadcast says iteration %d", errMismatch, ctl[0])
		}
		if ctl[1] == 1 {
			return iter, checks, nil
		}
		n := sizes[iter%len(sizes)]
		k, err := step(c, iter, n)
		if err != nil {
			return iter, checks, err
		}
		checks += k
		if cfg.stallRank >= 0 && cfg.stallRank < size && iter == cfg.stallIter {
			k, err := flood(c, cfg)
			if err != nil {
				return iter, checks, err
			}
			checks += k
		}
		if iter == 0 && rank == 0 {
			fmt.Printf("chaos-worker: job %s, %d ranks: ready\n", jobID(), size)
		}
		if rank == 0 && cfg.stopFile != "" {
			fmt.Printf("chaos-worker: iteration %d done\n", iter)
		}
	}
}

// jobID is the launcher's job id, which names the job's shared-memory segments.
func jobID() string {
	if id := os.Getenv("GORUN_JOB_ID"); id != "" {
		return id
	}
	return "-"
}

func mismatch(what string, at int, got, want int64) error {
	return fmt.Errorf("%w: %s element %d is %d, want %d", errMismatch, what, at, got, want)
}

// step runs one iteration's operations on vectors of n elements and checks each result.
func step(c *comm.Comm, iter, n int) (int64, error) {
	rank, size := c.Rank(), c.Size()
	it := int64(iter)
	var checks int64

	// Allreduce: x_r[j] = (r+1)(i+1) + j*(r%3+1); the sum over r is closed.
	x := make([]int64, n)
	for j := range x {
		x[j] = int64(rank+1)*(it+1) + int64(j)*int64(rank%3+1)
	}
	sum := make([]int64, n)
	if err := collectives.Allreduce(c, x, sum, collectives.Sum[int64]()); err != nil {
		return checks, fmt.Errorf("allreduce of %d: %w", n, err)
	}
	s := int64(size)
	var w3 int64 // sum over r of (r%3+1)
	for r := range size {
		w3 += int64(r%3 + 1)
	}
	for j, v := range sum {
		if want := (it+1)*s*(s+1)/2 + int64(j)*w3; v != want {
			return checks, mismatch("allreduce", j, v, want)
		}
	}
	checks += int64(n)

	// Bcast from a root that moves with the iteration.
	root := iter % size
	y := make([]int64, n)
	if rank == root {
		for j := range y {
			y[j] = int64(root)*1_000_003 + it*7 + int64(j)
		}
	}
	if err := collectives.Bcast(c, y, root); err != nil {
		return checks, fmt.Errorf("bcast of %d from %d: %w", n, root, err)
	}
	for j, v := range y {
		if want := int64(root)*1_000_003 + it*7 + int64(j); v != want {
			return checks, mismatch("bcast", j, v, want)
		}
	}
	checks += int64(n)

	// Allgather of a tenth as much per rank.
	m := max(n/10, 1)
	z := make([]int64, m)
	for j := range z {
		z[j] = int64(rank)*1_000_000_007 + it*13 + int64(j)
	}
	all := make([]int64, m*size)
	if err := collectives.Allgather(c, z, all); err != nil {
		return checks, fmt.Errorf("allgather of %d: %w", m, err)
	}
	for r := range size {
		for j := range m {
			if v, want := all[r*m+j], int64(r)*1_000_000_007+it*13+int64(j); v != want {
				return checks, mismatch("allgather", r*m+j, v, want)
			}
		}
	}
	checks += int64(m * size)

	// A ring of point-to-point exchanges.
	next, prev := (rank+1)%size, (rank+size-1)%size
	out := make([]int64, n)
	for j := range out {
		out[j] = int64(rank)<<32 ^ (it*31 + int64(j))
	}
	in := make([]int64, n)
	if _, err := comm.Sendrecv(c, out, next, 7, in, prev, 7); err != nil {
		return checks, fmt.Errorf("ring exchange of %d: %w", n, err)
	}
	for j, v := range in {
		if want := int64(prev)<<32 ^ (it*31 + int64(j)); v != want {
			return checks, mismatch("ring", j, v, want)
		}
	}
	checks += int64(n)
	return checks, nil
}

// flood: every rank but cfg.stallRank sends it cfg.floodMsgs messages while it waits
// cfg.stallFor before receiving any; the senders' buffers and rings fill, and must neither
// lose nor corrupt a message, nor give the receiver up for dead while it is alive.
func flood(c *comm.Comm, cfg config) (int64, error) {
	rank, size := c.Rank(), c.Size()
	const tag = 9
	val := func(src, msg, j int) int64 { return int64(src)<<40 ^ int64(msg)<<20 ^ int64(j) }
	if rank != cfg.stallRank {
		reqs := make([]*comm.Request, cfg.floodMsgs)
		for m := range reqs {
			buf := make([]int64, cfg.floodLen)
			for j := range buf {
				buf[j] = val(rank, m, j)
			}
			reqs[m] = comm.Isend(c, buf, cfg.stallRank, tag)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return 0, fmt.Errorf("flood to rank %d: %w", cfg.stallRank, err)
		}
		return 0, nil
	}
	time.Sleep(cfg.stallFor)
	var checks int64
	buf := make([]int64, cfg.floodLen)
	for src := range size {
		if src == rank {
			continue
		}
		for m := range cfg.floodMsgs {
			if _, err := comm.Recv(c, buf, src, tag); err != nil {
				return checks, fmt.Errorf("flood from rank %d, message %d: %w", src, m, err)
			}
			for j, v := range buf {
				if want := val(src, m, j); v != want {
					return checks, mismatch(fmt.Sprintf("flood from rank %d message %d", src, m), j, v, want)
				}
			}
			checks += int64(len(buf))
		}
	}
	return checks, nil
}
