package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/stage"
	"github.com/spf13/pflag"
)

// expandRank replaces {rank} in a path with the job rank and {host} with the host name, so
// that ranks (or hosts sharing a file system) may each use their own file or directory.
func expandRank(path string, rank int) string {
	path = strings.ReplaceAll(path, "{rank}", strconv.Itoa(rank))
	if strings.Contains(path, "{host}") {
		h, _ := os.Hostname()
		path = strings.ReplaceAll(path, "{host}", h)
	}
	return path
}

func stageCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm stage", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "the model on the ranks that have it (any part of a split model); ranks without it receive")
	to := fs.String("to", "", "staging directory on every host ({rank} and {host} expand to the rank and the host name)")
	tpDeg := fs.Int("tp", 0, "tensor-parallel degree of the job that will load the copies: a multiple of the ranks (default: the ranks)")
	eachRank := fs.Bool("each-rank", false, "every rank stages its own copy, as if alone on its host")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: gorun -n N llm stage -m MODEL --to DIR [--tp T]

Copies to every host exactly the bytes of MODEL that its ranks will read at TP=T (their shard of
each tensor, plus the shared tensors), over the job's transport, from the ranks that have the
file: a sparse DIR/model.gguf and a manifest DIR/stage.json with a checksum per tensor. Run again
after an interruption to finish it: tensors already staged (and still matching their checksum)
are not sent again. Then "gorun -n T llm generate -m DIR" (or serve) loads the copies.

`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" || *to == "" {
		return fmt.Errorf("give -m MODEL and --to DIR")
	}
	w, err := comm.Init()
	if err != nil {
		return fmt.Errorf("joining the job: %w", err)
	}
	defer w.Finalize()
	opt := stage.Options{Model: expandRank(*path, w.Rank()), Dir: expandRank(*to, w.Rank()), TP: *tpDeg}
	if *eachRank {
		opt.HostOf = func(r int) string { return "rank" + strconv.Itoa(r) }
	}
	if !*quiet {
		opt.Progress = stderr
	}
	start := time.Now()
	res, err := stage.Stage(w, opt)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if res.Receiver {
		fmt.Fprintf(stdout, "rank %d: %s: %d tensors, %d already staged; %d bytes received in %.2fs (%.2fs with set-up)\n", w.Rank(), opt.Dir,
			res.Tensors, res.Skipped, res.Received, res.Elapsed.Seconds(), time.Since(start).Seconds())
	}
	return nil
}

// resolveModel returns the file rank w.Rank() opens for -m path (see stage.Resolve). The ranks
// agree first, so that a staged copy that does not fit one rank's place in the job stops every
// rank before loading, not the others mid-way in their first collective.
// A staged copy holds tensor-parallel shards of every layer, not a pipeline stage's whole
// layers: with stages > 1 it is refused (reading it would read the holes of the sparse file).
func resolveModel(w *comm.Comm, path string, stages int) (string, error) {
	p, err := stage.Resolve(expandRank(path, w.Rank()), w.Rank(), w.Size())
	if err == nil && stages > 1 && p != expandRank(path, w.Rank()) {
		err = fmt.Errorf("%s is a staged copy (llm stage), which serves tensor-parallel layouts only: give the model file for --pp %d", path, stages)
	}
	bad := int64(0)
	if err != nil {
		bad = 1
	}
	all := make([]int64, w.Size())
	if gerr := collectives.Allgather(w, []int64{bad}, all); gerr != nil {
		return "", gerr
	}
	if err != nil {
		return "", err
	}
	for r, b := range all {
		if b != 0 {
			return "", fmt.Errorf("rank %d cannot use %s (see its error)", r, path)
		}
	}
	return p, nil
}
