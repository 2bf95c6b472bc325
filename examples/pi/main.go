// Command pi integrates 4/(1+x^2) over [0,1] (which is pi) with the midpoint rule: each rank
// sums every size-th interval, and a reduction adds the partial sums on rank 0.
//
//	gorun -n 4 ./examples/pi --intervals 100000000
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	intervals := flag.Int("intervals", 50_000_000, "number of integration intervals")
	flag.Parse()
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
	start := time.Now()
	// Every rank needs the same interval count: rank 0's flag wins.
	n := []int64{int64(*intervals)}
	if err := collectives.Bcast(c, n, 0); err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
	h := 1 / float64(n[0])
	var local float64
	for i := int64(c.Rank()); i < n[0]; i += int64(c.Size()) {
		x := h * (float64(i) + 0.5)
		local += 4 / (1 + x*x)
	}
	sum := []float64{0}
	if err := collectives.Reduce(c, []float64{local * h}, sum, collectives.Sum[float64](), 0); err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("pi is approximately %.16f, error %.2e (%d intervals, %d ranks, %v)\n",
			sum[0], math.Abs(sum[0]-math.Pi), n[0], c.Size(), time.Since(start).Round(time.Millisecond))
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
}
