package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/launcher"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/stage"
	"github.com/spf13/pflag"
)

// planHost is one machine of a plan: its ranks and the memory they may use together.
type planHost struct {
	name  string
	ranks int
	mem   int64 // usable bytes; 0: unknown
	how   string
}

// planRank is one rank's memory in a layout.
type planRank struct {
	host                 int
	layers               [2]int
	weights, kv, scratch int64
}

func planCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm plan", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "GGUF model (any part of a split model); only its header is read")
	n := fs.IntP("np", "n", 0, "ranks (default: the job's, or the hostfile's slots, or 1)")
	hostfile := fs.String("hostfile", "", "hosts and slots, as gorun's --hostfile (Open MPI or MPICH format)")
	tpFlag := fs.Int("tp", 0, "tensor-parallel degree inside each pipeline stage (default: the ranks of a host)")
	memFlag := fs.String("mem", "", "usable memory: one size for every host (64G) or one per host in order (512G,512G,256G)")
	ctx := fs.IntP("ctx-size", "c", 0, "context (KV cache) length in tokens (default: the model's, at most 4096)")
	batch := fs.IntP("batch-size", "b", 512, "tokens per forward pass, for the work-space estimate")
	kvType := fs.String("kv-type", "f16", "KV cache type: "+model.KVTypeNames)
	bw := fs.String("link-bw", "10G", "bandwidth of the links between hosts, bits/s (N, NK, NM, NG)")
	lat := fs.Duration("link-latency", 50*time.Microsecond, "one-way latency of a message between hosts")
	layerSplit := fs.String("layer-split", "", "layers per pipeline stage by hand (20,20,12,12); default: in proportion to the hosts' memory")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("no model: give -m FILE.gguf")
	}
	linkBits, err := parseBytes(*bw)
	if err != nil {
		return fmt.Errorf("--link-bw: %w", err)
	}
	if *batch < 1 {
		return fmt.Errorf("--batch-size %d: want >= 1", *batch)
	}
	if _, err := model.KVRowBytes(*kvType, 0); err != nil {
		return fmt.Errorf("--kv-type: %w", err)
	}
	f, err := gguf.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return err
	}
	if *ctx <= 0 {
		*ctx = min(cfg.ContextLen, 4096)
	}

	// Hosts: the hostfile's, the job's (each rank reports its memory), or this one.
	w, err := comm.Init()
	if err != nil {
		return fmt.Errorf("joining the job: %w", err)
	}
	defer w.Finalize()
	var hosts []planHost
	switch {
	case *hostfile != "":
		fh, err := os.Open(*hostfile)
		if err != nil {
			return err
		}
		hs, err := launcher.ParseHostfile(fh, *hostfile)
		fh.Close()
		if err != nil {
			return err
		}
		for _, h := range hs {
			hosts = append(hosts, planHost{name: h.Name, ranks: h.Slots})
		}
		if *n > 0 { // place n ranks over the hosts by their slots, cycling as gorun does
			for i := range hosts {
				hosts[i].ranks = 0
			}
			for r := 0; r < *n; {
				for i := range hs {
					for k := 0; k < hs[i].Slots && r < *n; k++ {
						hosts[i].ranks++
						r++
					}
				}
			}
		}
	case w.Size() > 1:
		mine, _ := stage.UsableMemory()
		all := make([]int64, w.Size())
		if err := collectives.Allgather(w, []int64{mine}, all); err != nil {
			return err
		}
		idx := map[string]int{}
		for r := 0; r < w.Size(); r++ {
			id := w.HostID(r)
			i, ok := idx[id]
			if !ok {
				i = len(hosts)
				idx[id] = i
				hosts = append(hosts, planHost{name: fmt.Sprintf("host%d(rank %d)", i, r), mem: all[r], how: "MemAvailable/cgroup"})
			}
			hosts[i].ranks++
		}
		if w.Rank() != 0 {
			return nil
		}
	default:
		name, _ := os.Hostname()
		mem, ok := stage.UsableMemory()
		how := "MemAvailable/cgroup"
		if !ok {
			how = ""
		}
		hosts = []planHost{{name: name, ranks: max(*n, 1), mem: mem, how: how}}
	}
	if *memFlag != "" {
		parts := strings.Split(*memFlag, ",")
		if len(parts) != 1 && len(parts) != len(hosts) {
			return fmt.Errorf("--mem %q: give one size or one per host (%d hosts)", *memFlag, len(hosts))
		}
		for i := range hosts {
			v, err := parseBytes(strings.TrimSpace(parts[min(i, len(parts)-1)]))
			if err != nil {
				return fmt.Errorf("--mem: %w", err)
			}
			hosts[i].mem, hosts[i].how = v, "--mem"
		}
	}
	ranks := 0
	for _, h := range hosts {
		ranks += h.ranks
	}

	var bytesTotal int64
	for _, t := range f.Tensors {
		bytesTotal += t.Size
	}
	fmt.Fprintf(stdout, "model %s: %s, %d layers, dim %d, %d heads (%d KV), FFN %d, vocab %d; %s of tensors in %d file(s)\n",
		*path, cfg.Arch, cfg.Layers, cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.FFN, cfg.Vocab, human(bytesTotal), len(f.Parts()))
	fmt.Fprintf(stdout, "context %d tokens, KV cache %s, work-space for %d-token passes; links %s bit/s, %v latency\n",
		*ctx, *kvType, *batch, *bw, *lat)
	fmt.Fprintf(stdout, "%d rank(s) on %d host(s):", ranks, len(hosts))
	for _, h := range hosts {
		mem := "memory unknown (give --mem)"
		if h.mem > 0 {
			mem = fmt.Sprintf("%s usable (%s)", human(h.mem), h.how)
		}
		fmt.Fprintf(stdout, " %s: %d rank(s), %s;", h.name, h.ranks, mem)
	}
	fmt.Fprintln(stdout)

	pm := planModel{f: f, cfg: cfg, ctx: *ctx, batch: *batch, kvType: *kvType}
	dimBytes := float64(cfg.Dim * 4)
	bits := float64(linkBits)

	// Layout 1: one tensor-parallel group over every rank.
	fmt.Fprintf(stdout, "\nlayout TP=%d (tensor parallel over all ranks, runnable today):\n", ranks)
	var tpRanks []planRank
	tpOK := true
	if err := cfg.CheckDegree(ranks); err != nil {
		fmt.Fprintf(stdout, "  not possible: %v\n", err)
		tpOK = false
	} else {
		r := 0
		for hi, h := range hosts {
			for k := 0; k < h.ranks; k++ {
				pr, err := pm.rank(hi, r, ranks, 0, cfg.Layers, true, true)
				if err != nil {
					return err
				}
				tpRanks = append(tpRanks, pr)
				r++
			}
		}
		tpOK = printRanks(stdout, hosts, tpRanks)
	}
	// Decode: two allreduces of one hidden vector per layer; a ring over p ranks sends
	// 2(p-1)/p of it from every rank in 2(p-1) steps.
	tpBytes, tpTime := 0.0, 0.0
	if ranks > 1 && len(hosts) > 1 {
		p := float64(ranks)
		per := 2 * (p - 1) / p * dimBytes
		tpBytes = float64(2*cfg.Layers) * per
		tpTime = float64(2*cfg.Layers) * (2*(p-1)*lat.Seconds() + per*8/bits)
	}

	// Layout 2: contiguous layer ranges, one stage per host (or ranks/tp stages).
	stages, tpIn := len(hosts), 0
	if *tpFlag > 0 {
		if ranks%*tpFlag != 0 {
			return fmt.Errorf("--tp %d does not divide the %d ranks", *tpFlag, ranks)
		}
		stages, tpIn = ranks / *tpFlag, *tpFlag
	}
	var rankHost []int
	for hi, h := range hosts {
		for k := 0; k < h.ranks; k++ {
			rankHost = append(rankHost, hi)
		}
	}
	stageHost := make([]int, stages)  // host of each stage's first rank
	stageRanks := make([]int, stages) // its tensor-parallel degree
	for s, r := 0, 0; s < stages; s++ {
		stageRanks[s] = tpIn
		if tpIn == 0 {
			stageRanks[s] = hosts[s].ranks
		}
		stageHost[s] = rankHost[r]
		r += stageRanks[s]
	}
	split, how, err := layerSplitFor(*layerSplit, cfg.Layers, stages, stageHost, hosts)
	if err != nil {
		return err
	}
	// The stages run with one tensor-parallel degree (ranks/PP): hosts of unequal rank counts
	// need --tp.
	uniform := true
	for _, k := range stageRanks {
		uniform = uniform && k == stageRanks[0]
	}
	fmt.Fprintf(stdout, "\nlayout PP=%d x TP per stage %v, layers %v (%s):\n", stages, stageRanks, split, how)
	var ppRanks []planRank
	l0, r := 0, 0
	ppOK := true
	for s := 0; s < stages; s++ {
		if err := cfg.CheckDegree(stageRanks[s]); err != nil {
			fmt.Fprintf(stdout, "  stage %d not possible: %v\n", s, err)
			ppOK = false
			break
		}
		for k := 0; k < stageRanks[s]; k++ {
			pr, err := pm.rank(rankHost[r], k, stageRanks[s], l0, l0+split[s], s == 0, s == stages-1)
			if err != nil {
				return err
			}
			ppRanks = append(ppRanks, pr)
			r++
		}
		l0 += split[s]
	}
	if ppOK {
		ppOK = printRanks(stdout, hosts, ppRanks)
	}
	// Decode: the hidden vector crosses each stage boundary once per token.
	ppBytes := float64(stages-1) * dimBytes
	ppTime := float64(stages-1) * (lat.Seconds() + dimBytes*8/bits)

	fmt.Fprintf(stdout, "\ntraffic between hosts per decoded token (prefill of %d tokens: x%d bytes, same number of messages):\n", *batch, *batch)
	if cfg.CheckDegree(ranks) == nil {
		fmt.Fprintf(stdout, "  TP=%d: %.1f KiB per rank in %d allreduces, about %.3f ms of link time\n", ranks, tpBytes/1024, 2*cfg.Layers, tpTime*1e3)
	} else {
		fmt.Fprintf(stdout, "  TP=%d: not possible\n", ranks)
	}
	fmt.Fprintf(stdout, "  PP=%d: %.1f KiB in %d stage-to-stage sends, about %.3f ms of link time\n", stages, ppBytes/1024, stages-1, ppTime*1e3)
	job := fmt.Sprintf("gorun -n %d", ranks)
	if *hostfile != "" {
		job += " --hostfile " + *hostfile
	}
	parts := make([]string, len(split))
	for i, v := range split {
		parts[i] = strconv.Itoa(v)
	}
	ppCmd := fmt.Sprintf("%s llm generate -m %s --pp %d --layer-split %s", job, *path, stages, strings.Join(parts, ","))
	tpCmd := fmt.Sprintf("%s llm generate -m %s", job, *path)
	if !uniform {
		ppOK = false
		fmt.Fprintf(stdout, "  PP=%d: stages of unequal tensor-parallel degrees %v do not run: give --tp\n", stages, stageRanks)
	}
	switch {
	case tpOK && (!ppOK || tpTime <= ppTime):
		fmt.Fprintf(stdout, "recommended: TP=%d (fits, and the least link time per token):\n  %s\n", ranks, tpCmd)
		if ppOK && stages > 1 {
			fmt.Fprintf(stdout, "PP=%d also fits:\n  %s\n", stages, ppCmd)
		}
	case ppOK && !tpOK:
		fmt.Fprintf(stdout, "recommended: PP=%d (only it fits):\n  %s\n", stages, ppCmd)
	case ppOK:
		fmt.Fprintf(stdout, "recommended: PP=%d (less link time per token; TP=%d also fits):\n  %s\n", stages, ranks, ppCmd)
	case !uniform:
		fmt.Fprintf(stdout, "no layout that runs fits: give --tp for stages of one degree (or --mem when a memory is unknown)\n")
	default:
		fmt.Fprintf(stdout, "neither layout fits (or the memory is unknown: give --mem)\n")
	}
	return nil
}

func human(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", mib(n))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// planModel estimates one rank's memory.
type planModel struct {
	f      *gguf.File
	cfg    *model.Config
	ctx    int
	batch  int
	kvType string
}

// rank is rank r of a tensor-parallel group of p holding layers [l0,l1).
func (pm planModel) rank(host, r, p, l0, l1 int, first, last bool) (planRank, error) {
	c := pm.cfg
	needs, err := stage.StageNeeds(pm.f, r, p, l0, l1, first, last)
	if err != nil {
		return planRank{}, err
	}
	s, err := model.PlanShard(c, pm.f, r, p)
	if err != nil {
		return planRank{}, err
	}
	hd := c.HeadDim
	nq, nkv, nf := (s.H1-s.H0)*hd, (s.KV1-s.KV0)*hd, s.F1-s.F0
	row, err := model.KVRowBytes(pm.kvType, nkv)
	if err != nil {
		return planRank{}, err
	}
	kv := int64(l1-l0) * int64(pm.ctx) * 2 * int64(row)
	// The scratch buffers of model.grow for a pass of t tokens, in float32.
	t := int64(pm.batch)
	floats := t*int64(3*c.Dim+2*nq+2*nkv+2*nf+c.RopeDim) + int64((s.H1-s.H0)*pm.ctx) + int64(c.Dim)
	if s.OGather {
		floats += t * int64(c.Heads*hd)
	}
	if last {
		floats += int64(s.V1 - s.V0)
	}
	return planRank{host: host, layers: [2]int{l0, l1}, weights: needs.Bytes(), kv: kv, scratch: 4 * floats}, nil
}

// printRanks prints the ranks' memory and whether each host's ranks fit its memory.
func printRanks(out io.Writer, hosts []planHost, rs []planRank) bool {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  rank\thost\tlayers\tweights MiB\tKV MiB\twork MiB\ttotal MiB\t")
	sum := make([]int64, len(hosts))
	for i, r := range rs {
		tot := r.weights + r.kv + r.scratch
		sum[r.host] += tot
		fmt.Fprintf(tw, "  %d\t%s\t%d-%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", i, hosts[r.host].name, r.layers[0], r.layers[1]-1,
			mib(r.weights), mib(r.kv), mib(r.scratch), mib(tot))
	}
	tw.Flush()
	ok := true
	for i, h := range hosts {
		verdict := "memory unknown"
		switch {
		case h.mem > 0 && sum[i] <= h.mem:
			verdict = fmt.Sprintf("fits (%.0f%%)", 100*float64(sum[i])/float64(h.mem))
		case h.mem > 0:
			verdict = fmt.Sprintf("DOES NOT FIT (%.1f MiB over)", mib(sum[i]-h.mem))
			ok = false
		default:
			ok = false
		}
		if sum[i] > 0 || h.ranks > 0 {
			fmt.Fprintf(out, "  host %s: %.1f MiB needed of %.1f MiB usable: %s\n", h.name, mib(sum[i]), mib(h.mem), verdict)
		}
	}
	return ok
}

// layerSplitFor returns the layers of each stage: given by hand, or in proportion to the usable
// memory of the stages' hosts (pipeline.SplitByMemory, as the stages themselves split it), or
// even when a memory is unknown.
func layerSplitFor(spec string, layers, stages int, stageHost []int, hosts []planHost) ([]int, string, error) {
	if spec != "" {
		split, err := pipeline.ParseSplit(spec)
		if err != nil {
			return nil, "", err
		}
		if err := pipeline.CheckSplit(split, layers, stages); err != nil {
			return nil, "", fmt.Errorf("--layer-split %q: %w", spec, err)
		}
		return split, "by hand", nil
	}
	mem := make([]int64, stages)
	for s := range mem {
		mem[s] = hosts[stageHost[s]].mem
	}
	split, even, err := pipeline.SplitByMemory(layers, mem)
	if err != nil {
		return nil, "", err
	}
	if even {
		return split, "even: a host's memory is unknown", nil
	}
	return split, "in proportion to memory", nil
}
