// Command linalgbench times gorun's linalg Dgemm or Dgetrf on random
// column-major matrices with the same method and output as
// openblas/driver.c (best of REPS after one warm-up run), so bench.sh can run
// the two side by side.
//
// Usage: go run ./bench/linalg/linalgbench [-threads T] dgemm|dgetrf N REPS
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/linalg"
)

func main() {
	threads := flag.Int("threads", 1, "goroutines per call (linalg.SetThreads)")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: linalgbench [-threads T] dgemm|dgetrf N REPS")
		os.Exit(2)
	}
	routine := flag.Arg(0)
	n, err1 := strconv.Atoi(flag.Arg(1))
	reps, err2 := strconv.Atoi(flag.Arg(2))
	if err1 != nil || err2 != nil || n <= 0 || reps <= 0 {
		fmt.Fprintln(os.Stderr, "linalgbench: N and REPS must be positive integers")
		os.Exit(2)
	}
	if routine != "dgemm" && routine != "dgetrf" {
		fmt.Fprintf(os.Stderr, "linalgbench: unknown routine %q (want dgemm or dgetrf)\n", routine)
		os.Exit(2)
	}
	linalg.SetThreads(*threads)
	rng := rand.New(rand.NewPCG(1, 1))
	a0 := make([]float64, n*n)
	b := make([]float64, n*n)
	c := make([]float64, n*n)
	for i := range a0 {
		a0[i] = rng.Float64()*2 - 1
		b[i] = rng.Float64()*2 - 1
	}
	a := append([]float64(nil), a0...)
	ipiv := make([]int, n)
	flops := 2 * float64(n) * float64(n) * float64(n)
	if routine == "dgetrf" {
		flops /= 3
	}
	best, bestCPU := time.Duration(1<<62), time.Duration(1<<62)
	for r := 0; r <= reps; r++ { // run 0 warms up
		if routine == "dgetrf" {
			copy(a, a0)
		}
		t0, c0 := time.Now(), cpuTime()
		if routine == "dgemm" {
			linalg.Dgemm(linalg.NoTrans, linalg.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
		} else if info := linalg.Dgetrf(n, n, a, n, ipiv); info != 0 {
			fmt.Fprintf(os.Stderr, "linalgbench: dgetrf info=%d\n", info)
			os.Exit(1)
		}
		t, tc := time.Since(t0), cpuTime()-c0
		if r > 0 {
			best, bestCPU = min(best, t), min(bestCPU, tc)
		}
	}
	fmt.Printf("%s n=%d best_s=%.6f gflops=%.2f cpu_s=%.6f\n", routine, n, best.Seconds(), flops/best.Seconds()/1e9, bestCPU.Seconds())
}

// cpuTime is the CPU time used by the process (all threads, user+system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
