// Command commbench is an OSU-micro-benchmark-style suite for gorun's communication layer:
//
//	gorun -n 4 commbench allreduce
//	gorun -n 2 commbench latency --max-size 1M --csv
//	gorun -n 4 commbench allreduce --plot allreduce.png
//
// Tests: latency, bw, bibw (ranks 0 and 1), allreduce, bcast, reduce, allgather, alltoall,
// barrier. Package collectives/commbench holds the logic.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/collectives/commbench"
	"github.com/gorun-hpc/gorun/comm"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("commbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	minS := fs.StringP("min-size", "m", "1", "smallest message size (bytes; K, M, G suffixes)")
	maxS := fs.StringP("max-size", "M", "", "largest message size (default 64M; 4M for allgather and alltoall)")
	iters := fs.IntP("iterations", "i", 0, "timed iterations per size up to 8 KiB (default 1000)")
	itersL := fs.IntP("iterations-large", "I", 0, "timed iterations per size above 8 KiB (default 100)")
	warm := fs.IntP("warmup", "x", 0, "warm-up iterations per size up to 8 KiB (default 200)")
	warmL := fs.IntP("warmup-large", "X", 0, "warm-up iterations per size above 8 KiB (default 10)")
	window := fs.IntP("window", "W", 0, "messages in flight per iteration of bw and bibw (default 64)")
	asCSV := fs.Bool("csv", false, "print CSV instead of the OSU-style table")
	asJSON := fs.Bool("json", false, "print JSON instead of the OSU-style table")
	plotFile := fs.String("plot", "", "also write a PNG of latency and bandwidth against size (log-log)")
	cpuProf := fs.String("cpuprofile", "", "write each rank's CPU profile of the benchmark run (warm-up included) to FILE.rankN")
	traceFile := fs.String("trace", "", "write each rank's execution trace of the benchmark run (warm-up included) to FILE.rankN")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gorun -n N commbench [flags] TEST\n\nTEST is one of: %s\n\nflags:\n", strings.Join(commbench.Tests, ", "))
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nAlgorithms and thresholds: GORUN_COLL_* variables (see package collectives).\n")
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if *asCSV && *asJSON {
		fmt.Fprintln(stderr, "commbench: --csv and --json exclude each other")
		return 2
	}
	cfg := commbench.Config{Test: fs.Arg(0), Iters: *iters, ItersLarge: *itersL, Warmup: *warm, WarmupLarge: *warmL, Window: *window}
	var err error
	if cfg.MinSize, err = commbench.ParseSize(*minS); err != nil {
		fmt.Fprintf(stderr, "commbench: --min-size: %v\n", err)
		return 2
	}
	if *maxS != "" {
		if cfg.MaxSize, err = commbench.ParseSize(*maxS); err != nil {
			fmt.Fprintf(stderr, "commbench: --max-size: %v\n", err)
			return 2
		}
	}
	if err := collectives.TuningError(); err != nil {
		fmt.Fprintf(stderr, "commbench: %v\n", err)
		return 2
	}
	c, err := comm.Init()
	if err != nil {
		fmt.Fprintf(stderr, "commbench: %v\n", err)
		return 1
	}
	stop, err := startProfiles(*cpuProf, *traceFile, c.Rank())
	if err != nil {
		fmt.Fprintf(stderr, "commbench: %v\n", err)
		c.Abort(1)
		return 1
	}
	res, err := commbench.Run(c, cfg)
	if perr := stop(); perr != nil {
		fmt.Fprintf(stderr, "commbench: rank %d: %v\n", c.Rank(), perr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "commbench: rank %d: %v\n", c.Rank(), err)
		if c.Size() == 1 {
			return 1
		}
		c.Abort(1) // the other ranks may be waiting in a collective: end the job
	}
	code := 0
	if c.Rank() == 0 {
		switch {
		case *asCSV:
			err = res.WriteCSV(stdout)
		case *asJSON:
			err = res.WriteJSON(stdout)
		default:
			err = res.WriteTable(stdout)
		}
		if err == nil && *plotFile != "" {
			err = res.Plot(*plotFile)
		}
		if err != nil {
			fmt.Fprintf(stderr, "commbench: %v\n", err)
			code = 1
		}
	}
	if err := c.Finalize(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "commbench: finalize: %v\n", err)
		code = 1
	}
	return code
}

// startProfiles starts the CPU profile and the execution trace asked for, each rank writing its
// own file (the name with ".rankN" appended); the returned function stops them and closes the
// files.
func startProfiles(cpuFile, traceFile string, rank int) (func() error, error) {
	var closers []func() error
	stop := func() error {
		var first error
		for _, c := range closers {
			if err := c(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if cpuFile != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", cpuFile, rank))
		if err != nil {
			return stop, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("--cpuprofile: %w", err)
		}
		closers = append(closers, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if traceFile != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", traceFile, rank))
		if err != nil {
			stop()
			return func() error { return nil }, fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return func() error { return nil }, fmt.Errorf("--trace: %w", err)
		}
		closers = append(closers, func() error { trace.Stop(); return f.Close() })
	}
	return stop, nil
}
