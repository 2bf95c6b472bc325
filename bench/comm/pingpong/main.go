// Command pingpong measures the distribution of one-way point-to-point latency between ranks 0
// and 1 (half of each round trip), not only its mean as commbench's latency test does: on a
// shared machine the mean of a short run is decided by a few scheduling stalls, while the median
// shows the transport's own cost.
//
//	go build ./bench/comm/pingpong && gorun -n 2 --transport shm ./pingpong -n 20000 -size 8
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	iters := flag.Int("n", 20000, "timed round trips (after 1000 warm-up ones)")
	size := flag.Int("size", 8, "message size in bytes")
	flag.Parse()
	if *iters < 1 || *size < 0 {
		fmt.Fprintln(os.Stderr, "pingpong: -n must be at least 1 and -size at least 0")
		os.Exit(2)
	}
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
	if c.Size() < 2 {
		fmt.Fprintln(os.Stderr, "pingpong: needs at least 2 ranks (it uses ranks 0 and 1)")
		os.Exit(2)
	}
	if err := run(c, *iters, *size); err != nil {
		fmt.Fprintf(os.Stderr, "pingpong: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

func run(c *comm.Comm, iters, size int) error {
	if c.Rank() > 1 {
		return nil
	}
	const warmup = 1000
	buf := make([]byte, size)
	oneWay := make([]time.Duration, iters)
	for i := -warmup; i < iters; i++ {
		t0 := time.Now()
		if c.Rank() == 0 {
			if err := comm.Send(c, buf, 1, 1); err != nil {
				return err
			}
			if _, err := comm.Recv(c, buf, 1, 1); err != nil {
				return err
			}
		} else {
			if _, err := comm.Recv(c, buf, 0, 1); err != nil {
				return err
			}
			if err := comm.Send(c, buf, 0, 1); err != nil {
				return err
			}
		}
		if i >= 0 {
			oneWay[i] = time.Since(t0) / 2
		}
	}
	if c.Rank() != 0 {
		return nil
	}
	var sum time.Duration
	for _, d := range oneWay {
		sum += d
	}
	slices.Sort(oneWay)
	us := func(q float64) float64 { return oneWay[int(q*float64(iters-1))].Seconds() * 1e6 }
	fmt.Printf("size %d B, %d round trips, one-way us: mean %.3f p10 %.3f p50 %.3f p90 %.3f p99 %.3f max %.1f\n",
		size, iters, sum.Seconds()*1e6/float64(iters), us(0.1), us(0.5), us(0.9), us(0.99), us(1))
	return nil
}
