package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/quant"
	"github.com/spf13/pflag"
)

func mkmodel(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm mkmodel", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	shapeName := fs.String("shape", "349M", "named shape ("+model.ShapeNames()+"); the flags below override its fields")
	typName := fs.String("type", "q8_0", "weight type: "+strings.ToLower(quant.SupportedNames()))
	outPath := fs.StringP("output", "o", "", "file to write")
	vocabFrom := fs.String("vocab-from", "", "copy the tokenizer from this GGUF file (its vocabulary size wins)")
	seed := fs.Uint64("seed", 1, "random seed (the same seed writes the same file)")
	from := fs.String("from", "", "upcycle this trained dense llama GGUF instead of random weights: widened to --dim and --ffn (default 256), --experts experts (default 8, 0: dense) of family --arch (llama, qwen2moe, deepseek2); F32 only (quantize after)")
	perturb := fs.Float64("perturb", model.DefaultUpcycle.Perturb, "with --from: each expert's perturbation, relative to the RMS of the dense FFN's matrices")
	routerScale := fs.Float64("router-scale", model.DefaultUpcycle.RouterScale, "with --from: router weights are this times N(0,1)/sqrt(source dim)")
	var sh model.Shape
	fs.StringVar(&sh.Arch, "arch", "", "architecture: "+strings.Join(model.Architectures(), ", "))
	fs.IntVar(&sh.Dim, "dim", 0, "embedding length")
	fs.IntVar(&sh.Layers, "layers", 0, "layers")
	fs.IntVar(&sh.Heads, "heads", 0, "query heads")
	fs.IntVar(&sh.KVHeads, "kv-heads", 0, "KV heads")
	fs.IntVar(&sh.FFN, "ffn", 0, "feed-forward size")
	fs.IntVar(&sh.Vocab, "vocab", 0, "vocabulary size")
	fs.IntVar(&sh.Experts, "experts", 0, "routed experts per layer (mixture of experts)")
	fs.IntVar(&sh.ExpertsUsed, "experts-used", 0, "experts per token")
	fs.IntVar(&sh.ExpertFFN, "expert-ffn", 0, "hidden size of each expert")
	fs.IntVar(&sh.SharedFFN, "shared-ffn", 0, "hidden size of the shared expert (qwen2moe)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: llm mkmodel [--shape 349M] [--type q8_0] -o FILE.gguf [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *from != "" {
		return upcycle(fs, *from, *outPath, *typName, sh, *seed, *perturb, *routerScale, stdout)
	}
	base, ok := model.Shapes[*shapeName]
	if !ok {
		return fmt.Errorf("unknown shape %q (known: %s)", *shapeName, model.ShapeNames())
	}
	for _, o := range []struct {
		v   *int
		dst *int
	}{{&sh.Dim, &base.Dim}, {&sh.Layers, &base.Layers}, {&sh.Heads, &base.Heads}, {&sh.KVHeads, &base.KVHeads}, {&sh.FFN, &base.FFN}, {&sh.Vocab, &base.Vocab},
		{&sh.Experts, &base.Experts}, {&sh.ExpertsUsed, &base.ExpertsUsed}, {&sh.ExpertFFN, &base.ExpertFFN}, {&sh.SharedFFN, &base.SharedFFN}} {
		if *o.v > 0 {
			*o.dst = *o.v
		}
	}
	if sh.Arch != "" {
		base.Arch = sh.Arch
	}
	typ, err := gguf.ParseType(*typName)
	if err != nil {
		return err
	}
	if *outPath == "" {
		return fmt.Errorf("no output file: give -o FILE.gguf")
	}
	var vocab *model.Vocabulary
	if *vocabFrom != "" {
		vf, err := gguf.Open(*vocabFrom)
		if err != nil {
			return err
		}
		v, err := model.VocabFrom(vf)
		vf.Close()
		if err != nil {
			return err
		}
		base.Vocab = len(v.Tokens)
		vocab = &v
	}
	start := time.Now()
	size, err := writeModel(*outPath, func(w io.Writer) error { return model.WriteSynthetic(w, base, typ, *seed, vocab) })
	if err != nil {
		return err
	}
	if base.Experts > 0 {
		fmt.Fprintf(stdout, "wrote %s: %s, dim %d, %d layers, %d heads (%d KV), %d experts (%d per token) of FFN %d, shared FFN %d, vocab %d, %s, %.1f M params (%.1f M active), %.1f MiB in %.1fs\n",
			*outPath, base.Arch, base.Dim, base.Layers, base.Heads, base.KVHeads, base.Experts, base.ExpertsUsed, base.ExpertFFN, base.SharedExpertFFN(), base.Vocab, typ,
			float64(base.Params())/1e6, float64(base.ActiveParams())/1e6, float64(size)/(1<<20), time.Since(start).Seconds())
		return nil
	}
	fmt.Fprintf(stdout, "wrote %s: %s, dim %d, %d layers, %d heads (%d KV), FFN %d, vocab %d, %s, %.1f M params, %.1f MiB in %.1fs\n",
		*outPath, base.Arch, base.Dim, base.Layers, base.Heads, base.KVHeads, base.FFN, base.Vocab, typ,
		float64(base.Params())/1e6, float64(size)/(1<<20), time.Since(start).Seconds())
	return nil
}

// upcycle writes `mkmodel --from`: a trained dense model widened and upcycled to experts.
func upcycle(fs *pflag.FlagSet, from, outPath, typName string, sh model.Shape, seed uint64, perturb, routerScale float64, stdout io.Writer) error {
	for _, name := range []string{"shape", "layers", "heads", "kv-heads", "vocab", "vocab-from", "expert-ffn", "shared-ffn"} {
		if fs.Changed(name) {
			return fmt.Errorf("--%s does not apply with --from (the source model decides it)", name)
		}
	}
	if typ, err := gguf.ParseType(typName); err != nil || typ != gguf.F32 && fs.Changed("type") {
		return fmt.Errorf("--from writes F32 (got --type %s): quantize the result with llm quantize", typName)
	}
	if outPath == "" {
		return fmt.Errorf("no output file: give -o FILE.gguf")
	}
	u := model.DefaultUpcycle
	u.Arch = cmp.Or(sh.Arch, "llama")
	u.Seed, u.Perturb, u.RouterScale = seed, perturb, routerScale
	if fs.Changed("dim") {
		u.Dim = sh.Dim
	}
	if fs.Changed("ffn") {
		u.FFN = sh.FFN
	}
	if fs.Changed("experts") {
		u.Experts = sh.Experts
		if u.Experts == 0 {
			u.ExpertsUsed = 0
		}
	}
	if fs.Changed("experts-used") {
		u.ExpertsUsed = sh.ExpertsUsed
	}
	src, err := gguf.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	start := time.Now()
	size, err := writeModel(outPath, func(w io.Writer) error { return model.WriteUpcycled(w, src, u) })
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s upcycled to %s, dim %d, FFN %d, %d experts (%d per token), perturbation %g, router scale %g, F32, %.1f MiB in %.1fs\n",
		outPath, from, u.Arch, u.Dim, u.FFN, u.Experts, u.ExpertsUsed, u.Perturb, u.RouterScale, float64(size)/(1<<20), time.Since(start).Seconds())
	return nil
}

func info(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm info", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "GGUF model file")
	tensors := fs.Bool("tensors", false, "list every tensor")
	if err := parse(fs, args); err != nil {
		return err
	}
	f, err := gguf.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(stdout, "%s: GGUF v%d, %d metadata keys, %d tensors, alignment %d, %.1f MiB\n", *path, f.Version, len(f.KV), len(f.Tensors), f.Alignment, float64(f.Size)/(1<<20))
	if parts := f.Parts(); len(parts) > 1 {
		fmt.Fprintf(stdout, "split in %d parts: %s ... %s\n", len(parts), parts[0].Path, parts[len(parts)-1].Path)
	}
	for _, kv := range f.KV {
		v := fmt.Sprint(kv.Value)
		if a, ok := kv.Value.(gguf.Array); ok {
			v = fmt.Sprintf("[%d x %s]", a.Len(), a.Elem)
		}
		if len(v) > 80 {
			v = v[:77] + "..."
		}
		fmt.Fprintf(stdout, "  %-45s %-8s %s\n", kv.Key, kv.Type, v)
	}
	// The kernel each tensor's products run on (from the quant registry and the CPU
	// detection); a type without one is an error naming the tensor.
	kernels := map[gguf.Type]string{}
	for _, t := range f.Tensors {
		if _, ok := kernels[t.Type]; ok {
			continue
		}
		k, err := quant.KernelName(t.Type)
		if err != nil {
			fmt.Fprintf(stdout, "tensor types: %s\n", typeSummary(f.Tensors))
			return fmt.Errorf("tensor %s has type %s, which gorun has no kernel for (supported: %s)", t.Name, t.Type, quant.SupportedNames())
		}
		kernels[t.Type] = k
	}
	if *tensors {
		untied := slices.ContainsFunc(f.Tensors, func(t gguf.TensorInfo) bool { return t.Name == "output.weight" })
		for _, t := range f.Tensors {
			k := kernels[t.Type]
			switch {
			case len(t.Dims) < 2:
				k = "-" // a vector (norm weights, biases): read elementwise, no product kernel
			case t.Name == "token_embd.weight" && untied:
				k = "rows dequantized on lookup"
			}
			fmt.Fprintf(stdout, "  %-32s %-6s %-16s %s\n", t.Name, t.Type, fmt.Sprint(t.Dims), k)
		}
	}
	fmt.Fprintf(stdout, "tensor types: %s\n", typeSummary(f.Tensors))
	for _, typ := range slices.Sorted(maps.Keys(kernels)) {
		fmt.Fprintf(stdout, "  %-6s kernel %s\n", typ, kernels[typ])
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "model: %s, dim %d, %d layers, %d heads / %d KV heads of %d, FFN %d, vocab %d\n",
		cfg.Arch, cfg.Dim, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.FFN, cfg.Vocab)
	fmt.Fprintf(stdout, "tensor-parallel degrees that work: %v\n", cfg.ValidDegrees(cfg.Heads))
	if cfg.Experts > 0 {
		dense := 0
		for i := 0; i < cfg.Layers; i++ {
			if cfg.Block(i).MoE == nil {
				dense++
			}
		}
		shared := "none"
		if cfg.SharedFFN > 0 {
			shared = fmt.Sprintf("FFN %d", cfg.SharedFFN)
		}
		fmt.Fprintf(stdout, "mixture of experts: %d experts, %d active per token, expert FFN %d, shared expert %s, %d dense layers\n",
			cfg.Experts, cfg.ExpertsUsed, cfg.ExpertFFN, shared, dense)
		var even []int
		for _, d := range cfg.ValidDegrees(cfg.Heads) {
			if d <= cfg.Experts && cfg.Experts%d == 0 {
				even = append(even, d)
			}
		}
		fmt.Fprintf(stdout, "expert parallelism: over the tensor-parallel ranks (EP = TP), whole experts per rank, even at EP %v (uneven placement otherwise)\n", even)
	}
	return nil
}

// typeSummary counts the tensors of each type, in ggml's numbering order, and names the
// types gorun has no kernels for.
func typeSummary(ts []gguf.TensorInfo) string {
	count := map[gguf.Type]int{}
	for _, t := range ts {
		count[t.Type]++
	}
	types := slices.Sorted(maps.Keys(count))
	var parts, missing []string
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s x%d", t, count[t]))
		if !quant.Supported(t) {
			missing = append(missing, t.String())
		}
	}
	s := strings.Join(parts, ", ")
	if len(missing) > 0 {
		s += " (no kernels here for " + strings.Join(missing, " ") + ")"
	}
	return s
}

// writeModel writes a model file at path with write, through a buffer, and returns its size.
// A regular file that could not be written whole is removed (a device or pipe is left alone).
func writeModel(path string, write func(io.Writer) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(f, 4<<20)
	cw := &countWriter{w: bw}
	err = write(cw)
	if err == nil {
		err = bw.Flush()
	}
	fi, serr := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if serr == nil && fi.Mode().IsRegular() {
			os.Remove(path)
		}
		return 0, err
	}
	return cw.n, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
