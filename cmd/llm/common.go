package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/stage"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

var errUsage = errors.New("usage")

func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errUsage
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// ppFlags are the pipeline- and expert-parallel flags of generate, bench and serve.
type ppFlags struct {
	stages, ubatch int
	split, mem     string
	experts        string
	wrap           func(model.Group) model.Group // wraps each stage's group (bench times it)
}

func addPPFlags(fs *pflag.FlagSet) *ppFlags {
	f := &ppFlags{}
	fs.IntVar(&f.stages, "pp", 1, "pipeline stages: contiguous layer ranges, each on ranks/PP consecutive ranks that split it by tensor parallelism")
	fs.StringVar(&f.split, "layer-split", "", "layers per pipeline stage (20,20,12,12); default: in proportion to each stage's memory")
	fs.StringVar(&f.mem, "mem", "", "usable memory of each rank for the layer split: one size (64G) or one per rank (2G,2G,1G,1G); default: cgroup limit or MemAvailable")
	fs.StringVar(&f.experts, "expert-split", "", "routed experts per rank of a stage in proportion to these weights (3,1: the first rank takes three quarters); default: evenly")
	fs.IntVar(&f.ubatch, "ubatch", pipeline.DefaultUBatch, "tokens per pipeline micro-batch of a prompt (stages work on successive micro-batches at once)")
	return f
}

// options turns the flags into pipeline options for rank of size ranks.
func (f *ppFlags) options(rank, size int) (pipeline.Options, error) {
	o := pipeline.Options{Stages: f.stages, UBatch: f.ubatch, Wrap: f.wrap}
	if f.stages < 1 {
		return o, fmt.Errorf("--pp %d: want >= 1", f.stages)
	}
	if f.ubatch < 1 {
		return o, fmt.Errorf("--ubatch %d: want >= 1", f.ubatch)
	}
	if f.split != "" {
		var err error
		if o.Split, err = pipeline.ParseSplit(f.split); err != nil {
			return o, err
		}
	}
	if f.mem != "" {
		parts := strings.Split(f.mem, ",")
		if len(parts) != 1 && len(parts) != size {
			return o, fmt.Errorf("--mem %q: give one size or one per rank (%d ranks)", f.mem, size)
		}
		v, err := parseBytes(strings.TrimSpace(parts[min(rank, len(parts)-1)]))
		if err != nil {
			return o, fmt.Errorf("--mem: %w", err)
		}
		o.Mem = v
	}
	if f.experts != "" {
		parts := strings.Split(f.experts, ",")
		if f.stages > 0 && size%f.stages == 0 && len(parts) != size/f.stages {
			return o, fmt.Errorf("--expert-split %q: give one weight per rank of a stage (%d)", f.experts, size/f.stages)
		}
		for _, p := range parts {
			w, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || w < 0 || w > 1<<20 {
				return o, fmt.Errorf("--expert-split %q: %q is not a weight in [0, 1048576]", f.experts, p)
			}
			o.Model.ExpertShares = append(o.Model.ExpertShares, w)
		}
	}
	return o, nil
}

// loaded is one rank's model.
type loaded struct {
	world *comm.Comm
	file  *gguf.File
	pm    *pipeline.Model // the job's model: stages of layers, tensor parallel inside
	m     *model.Model    // this rank's part of it
}

func (l *loaded) close() {
	if l.file != nil {
		l.file.Close()
	}
	if l.world != nil {
		l.world.Finalize()
	}
}

// load joins the job (a singleton without a launcher), maps the model and binds this rank's
// shard: of its pipeline stage's layers, split over the stage's ranks. A model or a layout
// that cannot be split over the job's ranks fails on every rank with the same message before
// any weight is read.
func load(path string, threads, ctx int, kvType string, pp *ppFlags, progress bool, stderr io.Writer) (*loaded, error) {
	if path == "" {
		return nil, fmt.Errorf("no model: give -m FILE.gguf")
	}
	w, err := comm.Init()
	if err != nil {
		return nil, fmt.Errorf("joining the job: %w", err)
	}
	l := &loaded{world: w}
	opt, err := pp.options(w.Rank(), w.Size())
	if err != nil {
		l.close()
		return nil, err
	}
	byHand := opt.Split != nil
	if path, err = resolveModel(w, path, &opt); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if l.file, err = gguf.Open(path); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	opt.Model = model.Options{Threads: threads, Context: ctx, KVType: kvType, ExpertShares: opt.Model.ExpertShares}
	if l.pm, err = pipeline.Load(w, l.file, opt); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if !byHand && opt.Split != nil {
		l.pm.How = "as staged (" + stage.ManifestFile + ")"
	}
	l.m = l.pm.Local
	var bar func(done, total int64)
	if progress && w.Rank() == 0 && isTerminal(stderr) {
		start := time.Now()
		bar = func(done, total int64) {
			const width = 40
			k := int(int64(width) * done / max(total, 1))
			fmt.Fprintf(stderr, "\rloading [%s%s] %3d%% %6.0f MiB %4.1fs", strings.Repeat("=", k), strings.Repeat(" ", width-k),
				100*done/max(total, 1), float64(done)/(1<<20), time.Since(start).Seconds())
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	l.m.Touch(bar)
	return l, nil
}

// layout describes a pipelined job's stages ("" for one stage).
func layout(pm *pipeline.Model) string {
	if pm.Stages == 1 {
		return ""
	}
	var parts []string
	for s, r := range pm.Ranges {
		parts = append(parts, fmt.Sprintf("stage %d: ranks %d-%d, layers %d-%d", s, s*pm.TP, (s+1)*pm.TP-1, r[0], r[1]-1))
	}
	return fmt.Sprintf("PP=%d x TP=%d, layers %s; %s", pm.Stages, pm.TP, pm.How, strings.Join(parts, "; "))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// memory returns this process's resident set, and the part of it that is file-backed
// (mapped weights), in bytes, from /proc/self/status.
func memory() (rss, file int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = v << 10
		case "RssFile:":
			file = v << 10
		}
	}
	return rss, file
}
