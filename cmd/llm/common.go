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
	"github.com/gorun-hpc/gorun/llm/tp"
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

// loaded is one rank's model.
type loaded struct {
	world *comm.Comm
	file  *gguf.File
	m     *model.Model
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
// shard. A model that cannot be split over the job's ranks fails on every rank with the same
// message before any weight is read.
func load(path string, threads, ctx int, kvType string, progress bool, stderr io.Writer) (*loaded, error) {
	if path == "" {
		return nil, fmt.Errorf("no model: give -m FILE.gguf")
	}
	w, err := comm.Init()
	if err != nil {
		return nil, fmt.Errorf("joining the job: %w", err)
	}
	l := &loaded{world: w}
	if path, err = resolveModel(w, path); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if l.file, err = gguf.Open(path); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if l.m, err = model.Load(l.file, model.Options{Group: tp.New(w), Threads: threads, Context: ctx, KVType: kvType}); err != nil {
		l.close()
		return nil, fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
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
