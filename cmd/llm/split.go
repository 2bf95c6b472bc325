package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/spf13/pflag"
)

// splitFlags are the flags of llama.cpp's gguf-split that say where parts end; llm split and
// llm quantize share them.
type splitFlags struct {
	size    *string
	tensors *int
	noFirst *bool
}

func addSplitFlags(fs *pflag.FlagSet, defTensors int) splitFlags {
	return splitFlags{
		size:    fs.String("split-max-size", "", "split: at most this much tensor data per part: N (bytes), NK, NM or NG (decimal units, as gguf-split)"),
		tensors: fs.Int("split-max-tensors", defTensors, "split: at most this many tensors per part"),
		noFirst: fs.Bool("no-tensor-first-split", false, "split: the first part holds metadata only"),
	}
}

// options returns the split options, and whether the flags ask for a split at all.
func (s splitFlags) options(fs *pflag.FlagSet) (gguf.SplitOptions, bool, error) {
	sizeSet, tensorsSet := fs.Changed("split-max-size"), fs.Changed("split-max-tensors")
	if sizeSet && tensorsSet {
		return gguf.SplitOptions{}, false, errors.New("give --split-max-size or --split-max-tensors, not both")
	}
	opt := gguf.SplitOptions{NoTensorFirstSplit: *s.noFirst}
	switch {
	case sizeSet:
		n, err := parseBytes(*s.size)
		if err != nil {
			return opt, false, fmt.Errorf("--split-max-size: %w", err)
		}
		opt.MaxBytes = n
	case *s.tensors > 0:
		opt.MaxTensors = *s.tensors
	case tensorsSet:
		return opt, false, fmt.Errorf("--split-max-tensors %d: want >= 1", *s.tensors)
	}
	return opt, sizeSet || tensorsSet || *s.noFirst, nil
}

// parseBytes reads N, NK, NM or NG (powers of 1000, as gguf-split's M and G).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	num := s
	if k := len(s); k > 0 {
		switch s[k-1] {
		case 'K', 'k':
			mult, num = 1e3, s[:k-1]
		case 'M', 'm':
			mult, num = 1e6, s[:k-1]
		case 'G', 'g':
			mult, num = 1e9, s[:k-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a positive size (N, NK, NM or NG)", s)
	}
	return n * mult, nil
}

func splitCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm split", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addSplitFlags(fs, 128)
	merge := fs.Bool("merge", false, "write IN (any part of a split model) as the one file OUT")
	dry := fs.Bool("dry-run", false, "print the parts, write nothing")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: llm split [flags] IN.gguf OUT_PREFIX
       llm split --merge IN-00001-of-0000N.gguf OUT.gguf

Writes IN as llama.cpp's split layout, OUT_PREFIX-00001-of-0000N.gguf ..., which every llm
command opens as one model from any of its parts. With neither limit, 128 tensors per part.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errUsage
		}
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errUsage
	}
	in, out := fs.Arg(0), fs.Arg(1)
	opt, _, err := sf.options(fs)
	if err != nil {
		return err
	}
	f, err := gguf.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	w := gguf.NewWriter()
	if err := w.CopyFrom(f); err != nil {
		return err
	}
	if *merge {
		if *dry {
			fmt.Fprintf(stdout, "%s: %d tensors from %d parts\n", out, len(f.Tensors), len(f.Parts()))
			return nil
		}
		return writeFile(out, w)
	}
	if strings.HasSuffix(out, ".gguf") {
		return fmt.Errorf("OUT %q is a prefix: the parts are named OUT-00001-of-0000N.gguf", out)
	}
	plan, err := w.SplitPlan(opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "n_split: %d\n", len(plan))
	for i, idx := range plan {
		var bytes int64
		for _, j := range idx {
			bytes += f.Tensors[j].Size
		}
		fmt.Fprintf(stdout, "%s: %d tensors, %.1f MB of tensor data\n", gguf.SplitPath(out, i, len(plan)), len(idx), float64(bytes)/1e6)
	}
	if *dry {
		return nil
	}
	_, err = w.WriteSplit(out, opt)
	return err
}

// writeFile writes w to path through a temporary file renamed at the end (path may be mapped as
// the source; a failure leaves no partial file).
func writeFile(path string, w *gguf.Writer) error {
	o, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = w.WriteTo(o)
	if err == nil {
		err = o.Chmod(0o644)
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.Name(), path)
	}
	if err != nil {
		os.Remove(o.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
