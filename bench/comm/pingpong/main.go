// Command pingpong measures the distribution of one-way point-to-point latency between ranks 0
// and 1 (half of each round trip), not only its mean as commbench's latency test does: on a
// shared machine the mean of a short run is decided by a few scheduling stalls, while the median
// shows the transport's own cost.
//
//	go build ./bench/comm/pingpong && gorun -n 2 --transport shm ./pingpong -n 20000 -size 8
//
// It also prints how much of the mean's excess over the median the slow trips carry, and the
// allocations per round trip (each one a share of fresh heap pages and GC cycles). Open MPI's
// distribution, printed the same way, comes from bench/comm/pingpong.c.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
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
	var m0, m1 runtime.MemStats
	for i := -warmup; i < iters; i++ {
		if i == 0 {
			runtime.ReadMemStats(&m0)
		}
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
	runtime.ReadMemStats(&m1)
	if c.Rank() != 0 {
		return nil
	}
	var sum time.Duration
	for _, d := range oneWay {
		sum += d
	}
	slices.Sort(oneWay)
	us := func(q float64) float64 { return oneWay[int(q*float64(iters-1))].Seconds() * 1e6 }
	fmt.Printf("size %d B, %d round trips, one-way us: mean %.3f p10 %.3f p50 %.3f p90 %.3f p99 %.3f p99.9 %.1f max %.1f\n",
		size, iters, sum.Seconds()*1e6/float64(iters), us(0.1), us(0.5), us(0.9), us(0.99), us(0.999), us(1))
	// Where the mean's excess over the median comes from: the trips slower than 2, 10 and
	// 100 times the median, how many and what share of the excess they carry.
	med := oneWay[(iters-1)/2]
	excess := sum - time.Duration(iters)*med
	for _, k := range []time.Duration{2, 10, 100} {
		n, ex := 0, time.Duration(0)
		for _, d := range oneWay {
			if d > k*med {
				n++
				ex += d - med
			}
		}
		share := 0.0
		if excess > 0 {
			share = float64(ex) / float64(excess)
		}
		fmt.Printf("  > %dx median: %d trips, %.0f%% of the mean's excess\n", k, n, 100*share)
	}
	fmt.Printf("  rank 0: %.2f allocations per round trip, %d GC cycles\n",
		float64(m1.Mallocs-m0.Mallocs)/float64(iters), m1.NumGC-m0.NumGC)
	return nil
}
