package main

import (
	"fmt"
	"io"
	"time"

	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/sample"
	"github.com/spf13/pflag"
)

func generate(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm generate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "GGUF model file")
	prompt := fs.StringP("prompt", "p", "Once upon a time", "prompt text")
	n := fs.IntP("n-predict", "n", 64, "tokens to generate")
	threads := fs.IntP("threads", "t", 1, "threads per rank")
	ctx := fs.IntP("ctx-size", "c", 0, "context length (0: the model's, at most 4096)")
	kvType := fs.String("kv-type", "f16", "KV cache type: "+model.KVTypeNames+" (f16 as llama.cpp's default)")
	var p sample.Params
	fs.Float32Var(&p.Temperature, "temp", 0, "temperature (0: greedy)")
	fs.IntVar(&p.TopK, "top-k", 40, "top-k (0: off)")
	fs.Float32Var(&p.TopP, "top-p", 0.95, "top-p (1: off)")
	fs.Float32Var(&p.MinP, "min-p", 0.05, "min-p (0: off)")
	fs.Float32Var(&p.RepeatPenalty, "repeat-penalty", 1, "repetition penalty (1: off)")
	fs.IntVar(&p.RepeatLastN, "repeat-last-n", 64, "tokens the repetition penalty looks back on")
	fs.Uint64Var(&p.Seed, "seed", 0, "random seed (same seed, same text, at every TP degree)")
	noProgress := fs.Bool("no-progress", false, "no loading progress bar")
	quiet := fs.Bool("quiet", false, "no timing summary on stderr")
	pp := addPPFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: [gorun -n N] llm generate -m MODEL.gguf [-p PROMPT] [-n TOKENS] [--pp STAGES] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if *n < 0 {
		return fmt.Errorf("-n %d: want >= 0", *n)
	}
	l, err := load(*path, *threads, *ctx, *kvType, pp, !*noProgress, stderr)
	if err != nil {
		return err
	}
	defer l.close()
	tok, err := model.LoadTokenizer(l.file)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(*prompt, true, true)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("the prompt is empty after tokenization")
	}
	if len(ids)+*n > l.pm.Context() {
		return fmt.Errorf("%d prompt tokens + %d to generate exceed the context of %d (-c)", len(ids), *n, l.pm.Context())
	}
	rank0 := l.world.Rank() == 0
	out := tok.NewStreamDecoder()
	if rank0 {
		fmt.Fprint(stdout, *prompt)
	}
	start := time.Now()
	var firstTok time.Duration
	count := 0
	err = l.pm.Generate(ids, *n, p, func(id int32) (bool, error) {
		if count == 0 {
			firstTok = time.Since(start)
		}
		count++
		if tok.IsEOG(id) {
			return false, nil
		}
		if rank0 {
			fmt.Fprint(stdout, out.Add(id))
			if f, ok := stdout.(interface{ Sync() error }); ok {
				f.Sync()
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("rank %d: %w", l.world.Rank(), err)
	}
	total := time.Since(start)
	if rank0 {
		fmt.Fprintln(stdout, out.Flush())
		if !*quiet {
			dec := total - firstTok
			fmt.Fprintf(stderr, "prompt: %d tokens in %.1f ms (%.1f tokens/s); generated %d tokens, %.1f tokens/s; %d rank(s), %d thread(s) each\n",
				len(ids), ms(firstTok), float64(len(ids))/firstTok.Seconds(), count, float64(max(count-1, 0))/dec.Seconds(),
				l.world.Size(), *threads)
			if lay := layout(l.pm); lay != "" {
				fmt.Fprintln(stderr, lay)
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
