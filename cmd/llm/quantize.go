package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/quant"
	"github.com/spf13/pflag"
)

func quantizeCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm quantize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	threads := fs.IntP("threads", "t", runtime.NumCPU(), "goroutines quantizing rows")
	quiet := fs.Bool("quiet", false, "no per-tensor lines")
	sf := addSplitFlags(fs, 0)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: llm quantize [flags] IN.gguf OUT.gguf TYPE\n\nTYPE is one of llama-quantize's presets: %s\n"+
			"With a --split-* flag the output is split: OUT-00001-of-0000N.gguf ... (OUT without .gguf).\n\n", quant.PresetNames())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errUsage
		}
		return err
	}
	if fs.NArg() != 3 {
		fs.Usage()
		return errUsage
	}
	in, out, typ := fs.Arg(0), fs.Arg(1), fs.Arg(2)
	p, err := quant.PresetByName(typ)
	if err != nil {
		return err
	}
	if *threads < 1 {
		return fmt.Errorf("--threads %d: want >= 1", *threads)
	}
	splitOpt, split, err := sf.options(fs)
	if err != nil {
		return err
	}
	if split && splitOpt.MaxBytes == 0 && splitOpt.MaxTensors == 0 {
		splitOpt.MaxTensors = 128 // --no-tensor-first-split alone: gguf-split's default count
	}
	f, err := gguf.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	w, plan, err := quantizePlan(f, p, *threads)
	if err != nil {
		return err
	}
	if !*quiet {
		for i, t := range f.Tensors {
			fmt.Fprintf(stdout, "%-32s %-7v %-6s -> %s\n", t.Name, t.Dims, t.Type, plan[i])
		}
	}
	if split {
		// WriteSplit renames its temporary parts at the end, as writeFile does.
		_, err = w.WriteSplit(strings.TrimSuffix(out, ".gguf"), splitOpt)
		return err
	}
	// OUT may be IN (mapped while it is read).
	return writeFile(out, w)
}

// quantizePlan sets up the writer of f quantized with preset p: f's metadata with the new file
// type, and its tensors, converted when they are written, in llama-quantize's order
// (quant.TensorLess). It returns the type of each of f's tensors.
func quantizePlan(f *gguf.File, p quant.Preset, threads int) (*gguf.Writer, []gguf.Type, error) {
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, nil, err
	}
	mi := quant.ModelInfo{Layers: cfg.Layers, GQA: cfg.Heads / max(1, cfg.KVHeads), Experts: cfg.Experts,
		Big70B: cfg.Arch == "llama" && cfg.Experts != 8 && cfg.Layers == 80 && cfg.Heads != cfg.KVHeads}
	shapes := make([]quant.TensorShape, len(f.Tensors))
	for i, t := range f.Tensors {
		shapes[i] = quant.TensorShape{Name: t.Name, Dims: t.Dims, Type: t.Type}
	}
	plan, err := p.Plan(mi, shapes)
	if err != nil {
		return nil, nil, err
	}
	w := gguf.NewWriter()
	w.Alignment = f.Alignment
	for _, kv := range f.KV {
		if kv.Key == "general.file_type" || kv.Key == "general.quantization_version" || gguf.IsSplitKey(kv.Key) {
			continue
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return nil, nil, err
		}
	}
	w.Set("general.quantization_version", uint32(2))
	w.Set("general.file_type", p.FType)
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return quant.TensorLess(f.Tensors[order[a]].Name, f.Tensors[order[b]].Name) })
	for _, i := range order {
		t := &f.Tensors[i]
		nt := plan[i]
		if nt == t.Type {
			if err := w.AddTensor(t.Name, t.Type, t.Dims, f.TensorData(t)); err != nil {
				return nil, nil, err
			}
			continue
		}
		if !quant.Supported(t.Type) {
			return nil, nil, fmt.Errorf("tensor %s has type %s, which cannot be read here (supported: %s)", t.Name, t.Type, quant.SupportedNames())
		}
		if !quant.CanQuantize(nt) {
			return nil, nil, fmt.Errorf("tensor %s: no quantizer for %s", t.Name, nt)
		}
		if err := w.AddTensorFunc(t.Name, nt, t.Dims, convertTensor(f, t, nt, threads)); err != nil {
			return nil, nil, err
		}
	}
	return w, plan, nil
}

// convertTensor returns the writer of tensor t converted to type nt: rows dequantized and
// requantized in chunks of at most 64 MiB of float32, spread over threads.
func convertTensor(f *gguf.File, t *gguf.TensorInfo, nt gguf.Type, threads int) func(io.Writer) error {
	return func(out io.Writer) error {
		cols := t.Dims[0]
		rows := t.Elements() / cols
		inRow, err := t.Type.RowBytes(cols)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		outRow, err := nt.RowBytes(cols)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		chunk := max(1, min(rows, (64<<20)/(4*cols)))
		src := f.TensorData(t)
		x := make([]float32, chunk*cols)
		q := make([]byte, chunk*outRow)
		pool := &quant.Pool{Threads: threads}
		for r0 := int64(0); r0 < rows; r0 += chunk {
			n := min(chunk, rows-r0)
			var mu sync.Mutex
			var ferr error
			pool.For(int(n), func(lo, hi int) {
				for r := int64(lo); r < int64(hi); r++ {
					row := src[(r0+r)*inRow : (r0+r+1)*inRow]
					xr := x[r*cols : (r+1)*cols]
					err := quant.Dequantize(t.Type, row, xr)
					if err == nil {
						err = quant.Quantize(nt, xr, q[r*outRow:(r+1)*outRow])
					}
					if err != nil {
						mu.Lock()
						ferr = cmp.Or(ferr, err)
						mu.Unlock()
						return
					}
				}
			})
			if ferr != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, ferr)
			}
			if _, err := out.Write(q[:n*outRow]); err != nil {
				return err
			}
		}
		return nil
	}
}
