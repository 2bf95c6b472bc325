package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
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
	tpDeg := fs.Int("tp", 0, "ranks per pipeline stage (tensor-parallel degree) of the job that will load the copies; --pp x --tp is a multiple of the ranks (default: the ranks / --pp)")
	stages := fs.Int("pp", 1, "pipeline stages of the job that will load the copies: each host gets only its ranks' stages' layers")
	splitSpec := fs.String("layer-split", "", "layers per pipeline stage (20,20,12,12); default: in proportion to each stage's memory, as llm generate --pp splits")
	memSpec := fs.String("mem", "", "usable memory of each rank of the loading job for the layer split: one size (64G) or one per rank; default: each staging rank's cgroup limit or MemAvailable")
	eachRank := fs.Bool("each-rank", false, "every rank stages its own copy, as if alone on its host")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: gorun -n N llm stage -m MODEL --to DIR [--pp P] [--tp T] [--layer-split L]

Copies to every host exactly the bytes of MODEL that its ranks will read in a job of P pipeline
stages of T ranks each (their stage's layers, their shard of each of its tensors, the embedding
on the first stage, the head on the last), over the job's transport, from the ranks that have
the file: a sparse DIR/model.gguf and a manifest DIR/stage.json with the layout, the layer split
and a checksum per tensor. Run again after an interruption to finish it: tensors already staged
(and still matching their checksum) are not sent again. Then
"gorun -n P*T llm generate -m DIR --pp P" (or bench, serve) loads the copies, with the staged
layer split.

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
	opt := stage.Options{Model: expandRank(*path, w.Rank()), Dir: expandRank(*to, w.Rank()), PP: *stages, TP: *tpDeg}
	how := ""
	if opt.Split, how, err = stageSplit(w, expandRank(*path, w.Rank()), *stages, *tpDeg, *splitSpec, *memSpec); err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if w.Rank() == 0 && opt.Split != nil {
		fmt.Fprintf(stdout, "layer split %s (%s)\n", stage.SplitString(opt.Split), how)
	}
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

// stageSplit is the layer split that llm stage records for --pp stages: the one given, or one
// in proportion to the loading job's ranks' memory (--mem, or each staging rank's own for the
// ranks it stands for), as pipeline.Load would choose it. Every rank of w calls it; the layer
// count comes from whichever ranks have the model.
func stageSplit(w *comm.Comm, path string, stages, tpDeg int, spec, mem string) ([]int, string, error) {
	if stages < 1 {
		return nil, "", fmt.Errorf("--pp %d: want >= 1", stages)
	}
	if stages == 1 {
		if spec != "" {
			return nil, "", fmt.Errorf("--layer-split %s without --pp", spec)
		}
		return nil, "", nil
	}
	ranks := w.Size()
	if tpDeg > 0 {
		ranks = stages * tpDeg
	} else if ranks%stages != 0 {
		return nil, "", fmt.Errorf("--pp %d does not divide the %d staging ranks: give --tp (ranks per stage of the loading job)", stages, ranks)
	}
	if ranks%w.Size() != 0 {
		return nil, "", fmt.Errorf("--pp %d x --tp %d = %d ranks is not a multiple of the %d staging ranks", stages, tpDeg, ranks, w.Size())
	}
	// The model's layers and this rank's memory, from every rank.
	layers, mine := int64(0), int64(0)
	if f, err := gguf.Open(path); err == nil {
		if cfg, err := model.ReadConfig(f); err == nil {
			layers = int64(cfg.Layers)
		}
		f.Close()
	}
	if mem == "" {
		mine, _ = stage.UsableMemory()
	}
	all := make([]int64, 2*w.Size())
	if err := collectives.Allgather(w, []int64{layers, mine}, all); err != nil {
		return nil, "", err
	}
	layers = 0
	for r := 0; r < w.Size(); r++ {
		layers = max(layers, all[2*r])
	}
	if layers == 0 {
		return nil, "", fmt.Errorf("no rank could read the model %q", path)
	}
	if spec != "" {
		split, err := pipeline.ParseSplit(spec)
		if err != nil {
			return nil, "", err
		}
		return split, "by hand", pipeline.CheckSplit(split, int(layers), stages)
	}
	rankMem := make([]int64, ranks)
	k := ranks / w.Size()
	if mem != "" {
		parts := strings.Split(mem, ",")
		if len(parts) != 1 && len(parts) != ranks {
			return nil, "", fmt.Errorf("--mem %q: give one size or one per rank of the loading job (%d ranks)", mem, ranks)
		}
		for r := range rankMem {
			v, err := parseBytes(strings.TrimSpace(parts[min(r, len(parts)-1)]))
			if err != nil {
				return nil, "", fmt.Errorf("--mem: %w", err)
			}
			rankMem[r] = v
		}
	} else {
		for r := range rankMem {
			rankMem[r] = all[2*(r/k)+1]
		}
	}
	split, even, err := pipeline.SplitByMemory(int(layers), pipeline.StageMemory(rankMem, stages))
	how := "in proportion to the stages' memory"
	if even {
		how = "even: a rank's memory is unknown"
	}
	return split, how, err
}

// resolveModel returns the file rank w.Rank() opens for -m path (see stage.Resolve) in the
// layout of opt (its pipeline stages over the job's ranks). The ranks agree first, so that a
// staged copy that does not fit one rank's place in the job stops every rank before loading,
// not the others mid-way in their first collective. A staged copy for pipeline stages fixes
// the layer split: without --layer-split the run takes the manifest's (opt.Split is set), and
// copies staged with different splits on different hosts are an error on every rank.
func resolveModel(w *comm.Comm, path string, opt *pipeline.Options) (string, error) {
	stages := max(opt.Stages, 1)
	if w.Size()%stages != 0 {
		// pipeline.Load says so, alike on every rank, for a model file; a staged copy's
		// layout check needs the ranks per stage first.
		if st, err := os.Stat(expandRank(path, w.Rank())); err != nil || !st.IsDir() {
			return expandRank(path, w.Rank()), nil
		}
		return "", fmt.Errorf("--pp %d does not divide the job's %d ranks", stages, w.Size())
	}
	want := stage.Layout{PP: stages, TP: w.Size() / stages, Split: opt.Split}
	p, man, err := stage.Resolve(expandRank(path, w.Rank()), w.Rank(), want)
	// Every rank's status and, with stages, the split its copy was staged with (zeros: none).
	row := make([]int64, 1+stages)
	if err != nil {
		row[0] = 1
	} else if man != nil && stages > 1 {
		for s, v := range man.Split {
			row[1+s] = int64(v)
		}
	}
	all := make([]int64, w.Size()*len(row))
	if gerr := collectives.Allgather(w, row, all); gerr != nil {
		return "", gerr
	}
	if err != nil {
		return "", err
	}
	var split []int64
	from := -1
	for r := 0; r < w.Size(); r++ {
		got := all[r*len(row) : (r+1)*len(row)]
		if got[0] != 0 {
			return "", fmt.Errorf("rank %d cannot use %s (see its error)", r, path)
		}
		if got[1] == 0 {
			continue
		}
		if split == nil {
			split, from = got[1:], r
		} else if !slices.Equal(split, got[1:]) {
			return "", fmt.Errorf("%s: rank %d's copy was staged with layer split %s, rank %d's with %s: stage every host with the same split",
				path, from, splitString(split), r, splitString(got[1:]))
		}
	}
	if split != nil && opt.Split == nil {
		opt.Split = make([]int, len(split))
		for s, v := range split {
			opt.Split[s] = int(v)
		}
	}
	return p, nil
}

func splitString(split []int64) string {
	parts := make([]string, len(split))
	for i, v := range split {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, ",")
}
