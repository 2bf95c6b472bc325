package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/quant"
	"github.com/gorun-hpc/gorun/llm/tp"
	"github.com/spf13/pflag"
)

// benchResult is one llama-bench style row.
type benchResult struct {
	Model   string    `json:"model"`
	SizeMiB float64   `json:"size_mib"`
	ParamsM float64   `json:"params_m"`
	Ranks   int       `json:"ranks"`
	Stages  int       `json:"pp_stages,omitempty"` // pipeline stages when more than one
	Threads int       `json:"threads"`
	Test    string    `json:"test"`
	TPS     float64   `json:"tokens_per_s"`
	StdDev  float64   `json:"stddev"`
	Samples []float64 `json:"samples"`
	RankRSS []float64 `json:"rank_rss_mib,omitempty"`
	Kernel  string    `json:"kernel"`
}

func bench(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "GGUF model file")
	pp := fs.IntP("n-prompt", "p", 512, "prefill test: tokens in one batch (0: skip)")
	tg := fs.IntP("n-gen", "n", 128, "decode test: tokens generated one at a time (0: skip)")
	reps := fs.IntP("repetitions", "r", 3, "timed repetitions of each test (after an untimed warm-up: one prefill, or one decoded token)")
	threads := fs.IntP("threads", "t", 1, "threads per rank")
	kvType := fs.String("kv-type", "f16", "KV cache type: "+model.KVTypeNames+" (f16 as llama.cpp's default)")
	output := fs.StringP("output", "o", "md", "md (llama-bench style table) or jsonl")
	pps := addPPFlags(fs)
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to this file (per rank: .RANK appended when ranks > 1)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: [gorun -n N] llm bench -m MODEL.gguf [-p 512] [-n 128] [-r 3] [-t 1]\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *output != "md" && *output != "jsonl" {
		return fmt.Errorf("-o %q: want md or jsonl", *output)
	}
	if *reps < 1 || *pp < 0 || *tg < 0 {
		return fmt.Errorf("-r must be >= 1, -p and -n >= 0")
	}
	ex := &exchangeTimer{}
	pps.wrap = func(g model.Group) model.Group { ex.Group = g; return ex }
	l, err := load(*path, *threads, *pp+*tg+1, *kvType, pps, false, stderr)
	if err != nil {
		return err
	}
	defer l.close()
	m, pm := l.m, l.pm
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int32, max(*pp, *tg))
	for i := range tokens {
		tokens[i] = int32(rng.IntN(m.Cfg.Vocab))
	}
	var size int64
	for _, t := range l.file.Tensors {
		size += t.Size
	}
	var params int64
	for _, t := range l.file.Tensors {
		params += t.Elements()
	}
	typ := "?"
	for _, n := range []string{"blk.0.attn_q.weight", "blk.0.attn_q_b.weight"} {
		if t, ok := l.file.Tensor(n); ok {
			typ = t.Type.String()
			break
		}
	}
	name := fmt.Sprintf("%s %s %s", m.Cfg.Arch, strings.TrimSuffix(filepath.Base(*path), ".gguf"), typ)
	if *cpuprofile != "" {
		name := *cpuprofile
		if l.world.Size() > 1 {
			name = fmt.Sprintf("%s.%d", name, l.world.Rank())
		}
		pf, err := os.Create(name)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var rows []benchResult
	stages := 0 // omitted from the JSON for one stage
	if pm.Stages > 1 {
		stages = pm.Stages
	}
	// Like llama-bench: one untimed warm-up run per test (for decode, of one token), then the
	// timed repetitions.
	var timed time.Duration // wall time of the timed runs, all tests
	measure := func(test string, n int, body func(n int) error, warm int) error {
		pm.Reset()
		if err := body(warm); err != nil {
			return fmt.Errorf("rank %d: %s: %w", l.world.Rank(), test, err)
		}
		var samples []float64
		for r := 0; r < *reps; r++ {
			pm.Reset()
			start := time.Now()
			ex.on = true
			err := body(n)
			ex.on = false
			if err != nil {
				return fmt.Errorf("rank %d: %s: %w", l.world.Rank(), test, err)
			}
			d := time.Since(start)
			timed += d
			samples = append(samples, float64(n)/d.Seconds())
		}
		mean, sd := stats(samples)
		rows = append(rows, benchResult{Model: name, SizeMiB: float64(size) / (1 << 20), ParamsM: float64(params) / 1e6,
			Ranks: l.world.Size(), Stages: stages, Threads: *threads, Test: test, TPS: mean, StdDev: sd, Samples: samples, Kernel: quant.Kernel()})
		return nil
	}
	if *pp > 0 {
		if err := measure(fmt.Sprintf("pp%d", *pp), *pp, func(n int) error {
			if err := pm.Forward(tokens[:n]); err != nil {
				return err
			}
			_, err := pm.Argmax()
			return err
		}, *pp); err != nil {
			return err
		}
	}
	if *tg > 0 {
		if err := measure(fmt.Sprintf("tg%d", *tg), *tg, func(n int) error {
			id := tokens[0]
			for i := 0; i < n; i++ {
				if err := pm.Forward([]int32{id}); err != nil {
					return err
				}
				var err error
				if id, err = pm.Argmax(); err != nil {
					return err
				}
			}
			return nil
		}, 1); err != nil {
			return err
		}
	}
	// Per-rank resident memory, gathered to every rank (values in MiB).
	rss, file := memory()
	p := l.world.Size()
	const nfig = 6
	all := make([]float32, nfig*p)
	counts := make([]int, p)
	for i := range counts {
		counts[i] = nfig
	}
	mine := []float32{float32(rss) / (1 << 20), float32(file) / (1 << 20), float32(m.ResidentWeightBytes()) / (1 << 20),
		float32(ex.spent.Seconds() * 1e3), float32(ex.calls), float32(timed.Seconds() * 1e3)}
	if err := tp.New(l.world).Allgatherv(mine, all, counts); err != nil {
		return fmt.Errorf("gathering memory figures: %w", err)
	}
	for i := range counts {
		counts[i] = 2
	}
	// Each rank's routed experts [E0,E1), for the routing summary.
	experts := make([]float32, 2*p)
	if err := tp.New(l.world).Allgatherv([]float32{float32(m.Shard.E0), float32(m.Shard.E1)}, experts, counts); err != nil {
		return fmt.Errorf("gathering expert placement: %w", err)
	}
	if l.world.Rank() != 0 {
		return nil
	}
	rankRSS := make([]float64, p)
	for r := range rankRSS {
		rankRSS[r] = float64(all[nfig*r])
	}
	for i := range rows {
		rows[i].RankRSS = rankRSS
	}
	if *output == "jsonl" {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "| model | size | params | backend | threads | test | t/s |\n")
	fmt.Fprintf(stdout, "| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | -------------------: |\n")
	for _, r := range rows {
		backend := fmt.Sprintf("gorun TP=%d", r.Ranks)
		if pm.Stages > 1 {
			backend = fmt.Sprintf("gorun PP=%dxTP=%d", pm.Stages, pm.TP)
		}
		fmt.Fprintf(stdout, "| %-30s | %7.2f MiB | %8.2f M | %-10s | %7d | %13s | %12.2f ± %5.2f |\n",
			r.Model, r.SizeMiB, r.ParamsM, backend, r.Threads, r.Test, r.TPS, r.StdDev)
	}
	fmt.Fprintf(stdout, "\nkernels: %s\n", quant.Kernel())
	for r := 0; r < p; r++ {
		f := all[nfig*r:]
		fmt.Fprintf(stdout, "rank %d: resident %.1f MiB (mapped file %.1f MiB, other %.1f MiB); its shard's weights %.1f MiB\n",
			r, f[0], f[1], f[0]-f[1], f[2])
	}
	if p > 1 {
		// The exchange: the layers' allreduces (attention and the experts' partial outputs),
		// timed on each rank over the timed runs (waiting for slower ranks included).
		for r := 0; r < p; r++ {
			f := all[nfig*r:]
			fmt.Fprintf(stdout, "rank %d: exchange %.1f ms in %.0f allreduces, %.1f%% of the timed runs' %.1f ms\n",
				r, f[3], f[4], 100*float64(f[3])/max(float64(f[5]), 1e-9), f[5])
		}
	}
	if lay := layout(pm); lay != "" {
		fmt.Fprintln(stdout, lay)
	}
	fmt.Fprintf(stdout, "KV cache: %d bytes per token on each rank", m.KVBytesPerToken())
	if pm.Stages > 1 {
		fmt.Fprintf(stdout, " of stage 0")
	}
	if c := &m.Cfg; c.KVLoraRank > 0 {
		if k, _ := m.KVTypes(); k == "q8_0" {
			fmt.Fprintf(stdout, " (latent attention: %d layers x (%d latent in Q8_0 blocks, 34 bytes per 32, + %d rotary in F32))", c.Layers, c.KVLoraRank, c.RopeDim)
		} else {
			fmt.Fprintf(stdout, " (latent attention: %d layers x (%d latent + %d rotary) in %s)", c.Layers, c.KVLoraRank, c.RopeDim, k)
		}
	}
	fmt.Fprintln(stdout)
	if m.Cfg.Experts > 0 && pm.Stages == 1 { // with stages, each rank routes only its layers
		routing(stdout, m.ExpertTokens(), experts)
	}
	return nil
}

// routing prints how the token-expert assignments of all runs (warm-ups included) fell on the
// experts and on the ranks holding them (placement: E0, E1 per rank), and the imbalance: the
// busiest rank's share over the mean.
func routing(w io.Writer, perExpert []int64, placement []float32) {
	var total int64
	parts := make([]string, len(perExpert))
	for e, n := range perExpert {
		total += n
		parts[e] = fmt.Sprint(n)
	}
	fmt.Fprintf(w, "routing: %d token-expert assignments; per expert: %s\n", total, strings.Join(parts, " "))
	p := len(placement) / 2
	var busiest int64
	for r := 0; r < p; r++ {
		e0, e1 := int(placement[2*r]), int(placement[2*r+1])
		var n int64
		for e := e0; e < e1; e++ {
			n += perExpert[e]
		}
		busiest = max(busiest, n)
		fmt.Fprintf(w, "rank %d: experts %d..%d, %d assignments (%.1f%%)\n", r, e0, e1-1, n, 100*float64(n)/float64(max(total, 1)))
	}
	if total > 0 {
		fmt.Fprintf(w, "imbalance (busiest rank / mean): %.2f\n", float64(busiest)*float64(p)/float64(total))
	}
}

func stats(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	if len(x) > 1 {
		sd = math.Sqrt(sd / float64(len(x)-1))
	}
	return mean, sd
}

// exchangeTimer wraps a stage's group to time its allreduces while on is set.
type exchangeTimer struct {
	model.Group
	on    bool
	spent time.Duration
	calls int
}

func (g *exchangeTimer) AllreduceSum(x []float32) error {
	if !g.on {
		return g.Group.AllreduceSum(x)
	}
	t0 := time.Now()
	err := g.Group.AllreduceSum(x)
	g.spent += time.Since(t0)
	g.calls++
	return err
}
