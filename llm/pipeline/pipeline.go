// Package pipeline runs a model as pipeline stages: contiguous layer ranges, each held by a
// tensor-parallel group of ranks (package tp, over a sub-communicator), so that a model larger
// than any one host's memory runs across hosts with one message per stage boundary per pass
// instead of two allreduces per layer.
//
// Ranks: the job's P ranks form N stages of P/N consecutive ranks (gorun places consecutive
// ranks on one host, so a stage's tensor parallelism stays inside a host and the stages span
// hosts). Rank r is stage r/(P/N), tensor-parallel rank r%(P/N) in it. Each rank loads only its
// stage's layers (model.Options.Layers), the first stage also the token embedding, the last
// the output norm and head.
//
// A pass (ForwardBatch) runs every rank with the same sequences. The residual stream (one row
// of Dim float32 per token) goes from each rank to the rank of the same tensor-parallel index
// in the next stage, on a duplicate of the world communicator: after a stage's last allreduce
// every rank of it holds the whole stream, so peer-to-peer sends need no broadcast inside the
// next stage (one collective less on the critical path of every decoded token), and with TP > 1
// the copies cross the links between hosts in parallel. The last stage computes the logits;
// its greedy tokens (or gathered logits, for sampling) are broadcast to every rank, so that
// every rank takes the same decisions (stop, next step) without further messages. A server
// overlaps passes instead (overlap.go): plans go down the pipeline and results to rank 0 alone.
//
// A pass's tokens are cut into micro-batches (at most UBatch tokens, and at least as many
// micro-batches as stages when the pass has the tokens) so that stage s works on micro-batch
// k+1 while stage s+1 works on k: the prompt chunks of one sequence, or the decode tokens of
// several sequences, are in the pipeline at once. The last stage keeps each micro-batch's
// greedy tokens and its part of the logits rows, in order, for the whole pass.
package pipeline

import (
	"fmt"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/sample"
	"github.com/gorun-hpc/gorun/llm/stage"
	"github.com/gorun-hpc/gorun/llm/tp"
)

// DefaultUBatch is the default micro-batch of a pass, in tokens.
const DefaultUBatch = 32

// tagHidden marks the residual stream's messages (on the pipeline's own communicator).
const tagHidden = 1

// Options configures Load.
type Options struct {
	Stages int // pipeline stages (0: 1); must divide the ranks
	// Split is the layers of each stage, in order (nil: in proportion to each stage's memory).
	Split []int
	// Mem is this rank's usable memory in bytes (0: what stage.UsableMemory finds: the cgroup's
	// limit or MemAvailable). A stage's memory is its smallest rank's.
	Mem    int64
	UBatch int // tokens per micro-batch of a pass (0: DefaultUBatch)
	// Model is passed to model.Load, with Group and Layers set here.
	Model model.Options
	// Wrap, when set, wraps each stage's tensor-parallel group before the model gets it (the
	// server's timing of allreduces).
	Wrap func(model.Group) model.Group
}

// Model is one rank's part of a pipelined model.
type Model struct {
	Local  *model.Model // this rank's stage: its layers, split over the stage's ranks
	Group  model.Group  // the stage's tensor-parallel group, as Local uses it
	Stage  int          // this rank's stage
	Stages int
	TP     int      // ranks per stage
	Ranges [][2]int // every stage's layers [first, end)
	Mem    []int64  // every rank's usable memory as reported (nil when the split was given)
	How    string   // how the split was chosen

	world  *comm.Comm // the job
	pc     *comm.Comm // a duplicate of the job's communicator for the pipeline's messages
	ubatch int
	buf    []float32 // a received residual stream
	mbs    [][]model.Seq
	rows   int       // logits rows of the last pass
	ids    []int32   // the last stage's greedy tokens of those rows
	local  []float32 // the last stage's part of those rows' logits (its vocabulary range)
	pos    int
}

// Load joins this rank to its stage and loads the stage's layers from f (which must stay open
// while the model is used). Every rank of world calls it with the same options (Mem apart).
// Errors in the layout (stages not dividing the ranks, more stages than layers, a split that
// does not add up) are found alike on every rank, before any message.
func Load(world *comm.Comm, f *gguf.File, opt Options) (*Model, error) {
	p := world.Size()
	n := opt.Stages
	if n == 0 {
		n = 1
	}
	if n < 1 || p%n != 0 {
		return nil, fmt.Errorf("--pp %d does not divide the job's %d ranks", opt.Stages, p)
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if n > cfg.Layers {
		return nil, fmt.Errorf("--pp %d: more pipeline stages than the model's %d layers", n, cfg.Layers)
	}
	ub := opt.UBatch
	if ub == 0 {
		ub = DefaultUBatch
	}
	if ub < 1 {
		return nil, fmt.Errorf("micro-batch of %d tokens: want >= 1", ub)
	}
	pm := &Model{world: world, Stages: n, TP: p / n, ubatch: ub}
	pm.Stage = world.Rank() / pm.TP
	split := opt.Split
	pm.How = "by hand"
	if split != nil {
		if err := CheckSplit(split, cfg.Layers, n); err != nil {
			return nil, err
		}
	} else if n == 1 {
		pm.How = "one stage"
		split = []int{cfg.Layers}
	} else {
		mine := opt.Mem
		if mine <= 0 {
			mine, _ = stage.UsableMemory()
		}
		pm.Mem = make([]int64, p)
		if err := collectives.Allgather(world, []int64{mine}, pm.Mem); err != nil {
			return nil, fmt.Errorf("agreeing on the ranks' memory: %w", err)
		}
		var even bool
		if split, even, err = SplitByMemory(cfg.Layers, StageMemory(pm.Mem, n)); err != nil {
			return nil, err
		}
		pm.How = "in proportion to the stages' memory"
		if even {
			pm.How = "even: a rank's memory is unknown"
		}
	}
	pm.Ranges = Ranges(split)
	sub := world
	if n > 1 {
		if sub, err = world.Split(pm.Stage, world.Rank()); err != nil {
			return nil, fmt.Errorf("forming stage %d's communicator: %w", pm.Stage, err)
		}
		if pm.pc, err = world.Dup(); err != nil {
			return nil, fmt.Errorf("the pipeline's communicator: %w", err)
		}
	}
	var g model.Group = tp.New(sub)
	if opt.Wrap != nil {
		g = opt.Wrap(g)
	}
	pm.Group = g
	mo := opt.Model
	mo.Group = g
	if n > 1 {
		mo.Layers = pm.Ranges[pm.Stage]
	}
	if pm.Local, err = model.Load(f, mo); err != nil {
		return nil, err
	}
	return pm, nil
}

// StageMemory is each of n stages' memory from every rank's (ranks in stage order): its
// smallest rank's, 0 when one is unknown.
func StageMemory(rankMem []int64, n int) []int64 {
	per := len(rankMem) / n
	out := make([]int64, n)
	for s := range out {
		for r := s * per; r < (s+1)*per; r++ {
			if r == s*per || rankMem[r] < out[s] {
				out[s] = rankMem[r]
			}
		}
		out[s] = max(out[s], 0)
	}
	return out
}

func (pm *Model) first() bool { return pm.Stage == 0 }
func (pm *Model) last() bool  { return pm.Stage == pm.Stages-1 }

// root is the world rank that broadcasts the last stage's results.
func (pm *Model) root() int { return (pm.Stages - 1) * pm.TP }

// MicroBatches cuts a pass into micro-batches of at most ub tokens, in order; a sequence cut
// in several keeps Logits only on its last part, so the logits rows of the micro-batches, one
// after the other, are the pass's.
func MicroBatches(seqs []model.Seq, ub int) [][]model.Seq {
	var out [][]model.Seq
	var cur []model.Seq
	n := 0
	for _, q := range seqs {
		for off := 0; off < len(q.Tokens); {
			if n == ub {
				out = append(out, cur)
				cur, n = nil, 0
			}
			k := min(len(q.Tokens)-off, ub-n)
			cur = append(cur, model.Seq{Slot: q.Slot, Pos: q.Pos + off, Tokens: q.Tokens[off : off+k], Logits: q.Logits && off+k == len(q.Tokens)})
			off += k
			n += k
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// ubFor is the micro-batch size for a pass of t tokens: at most UBatch, and small enough that
// every stage has a micro-batch to work on (a step of several decode tokens is cut too).
func (pm *Model) ubFor(t int) int {
	return max(1, min(pm.ubatch, (t+pm.Stages-1)/pm.Stages))
}

// ForwardBatch runs a pass as model.Model.ForwardBatch does, stage after stage, micro-batch
// after micro-batch. Every rank of the job calls it with the same seqs.
func (pm *Model) ForwardBatch(c *model.Cache, seqs []model.Seq) error {
	if pm.Stages == 1 {
		return pm.Local.ForwardBatch(c, seqs)
	}
	// The checks the first stage's embedding makes, on every rank, so that a bad token fails
	// everywhere instead of leaving the later stages waiting for its residual stream.
	vocab := pm.Local.Cfg.Vocab
	for i, q := range seqs {
		if len(q.Tokens) == 0 {
			return fmt.Errorf("pipeline: sequence %d (slot %d) has no tokens", i, q.Slot)
		}
		for _, t := range q.Tokens {
			if t < 0 || int(t) >= vocab {
				return fmt.Errorf("model: token id %d outside the vocabulary of %d", t, vocab)
			}
		}
	}
	if len(seqs) == 0 {
		return fmt.Errorf("model: ForwardBatch of no tokens")
	}
	t := 0
	pm.rows = 0
	for _, q := range seqs {
		t += len(q.Tokens)
		if q.Logits {
			pm.rows++
		}
	}
	pm.mbs = MicroBatches(seqs, pm.ubFor(t))
	pm.ids, pm.local = pm.ids[:0], pm.local[:0]
	dim := pm.Local.Cfg.Dim
	me := pm.world.Rank()
	for k, mb := range pm.mbs {
		var in []float32
		if !pm.first() {
			t := 0
			for _, q := range mb {
				t += len(q.Tokens)
			}
			if cap(pm.buf) < t*dim {
				pm.buf = make([]float32, t*dim)
			}
			in = pm.buf[:t*dim]
			if _, err := comm.Recv(pm.pc, in, me-pm.TP, tagHidden); err != nil {
				return fmt.Errorf("stage %d: receiving micro-batch %d from stage %d: %w", pm.Stage, k, pm.Stage-1, err)
			}
		}
		out, err := pm.Local.ForwardHidden(c, mb, in)
		if err != nil {
			return fmt.Errorf("stage %d: %w", pm.Stage, err)
		}
		if !pm.last() {
			if err := comm.Send(pm.pc, out, me+pm.TP, tagHidden); err != nil {
				return fmt.Errorf("stage %d: sending micro-batch %d to stage %d: %w", pm.Stage, k, pm.Stage+1, err)
			}
			continue
		}
		// The last stage keeps each micro-batch's greedy tokens (agreed in the stage) and its
		// part of the logits rows, for BatchArgmax and BatchLogits.
		if c.Rows() > 0 {
			ids, err := pm.Local.BatchArgmax(c)
			if err != nil {
				return fmt.Errorf("stage %d: %w", pm.Stage, err)
			}
			pm.ids = append(pm.ids, ids...)
			pm.local = append(pm.local, c.LocalLogits()...)
		}
	}
	return nil
}

// BatchArgmax returns the greedy token of every logits row of the last pass on c, on every
// rank.
func (pm *Model) BatchArgmax(c *model.Cache) ([]int32, error) {
	if pm.Stages == 1 {
		return pm.Local.BatchArgmax(c)
	}
	if pm.rows == 0 {
		return nil, nil
	}
	ids := make([]int32, pm.rows)
	if pm.last() {
		copy(ids, pm.ids)
	}
	if err := collectives.Bcast(pm.pc, ids, pm.root()); err != nil {
		return nil, fmt.Errorf("broadcasting the tokens of stage %d: %w", pm.Stages-1, err)
	}
	return ids, nil
}

// BatchLogits returns the full-vocabulary logits of the given rows of the last pass on c, on
// every rank.
func (pm *Model) BatchLogits(c *model.Cache, rows []int) ([][]float32, error) {
	if pm.Stages == 1 {
		return pm.Local.BatchLogits(c, rows)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	for _, r := range rows {
		if r < 0 || r >= pm.rows {
			return nil, fmt.Errorf("model: logits row %d of %d", r, pm.rows)
		}
	}
	vocab := pm.Local.Cfg.Vocab
	flat := make([]float32, len(rows)*vocab)
	if pm.last() {
		if err := pm.gatherRows(rows, flat); err != nil {
			return nil, err
		}
	}
	if err := collectives.Bcast(pm.pc, flat, pm.root()); err != nil {
		return nil, fmt.Errorf("broadcasting the logits of stage %d: %w", pm.Stages-1, err)
	}
	out := make([][]float32, len(rows))
	for i := range out {
		out[i] = flat[i*vocab : (i+1)*vocab : (i+1)*vocab]
	}
	return out, nil
}

// gatherRows assembles, on the last stage, the full-vocabulary logits of the given rows into
// flat (one row of Vocab after the other) from every rank's part (one allgather in the stage).
func (pm *Model) gatherRows(rows []int, flat []float32) error {
	sh, vocab := pm.Local.Shard, pm.Local.Cfg.Vocab
	vl, p := sh.V1-sh.V0, sh.Size
	send := make([]float32, 0, len(rows)*vl)
	for _, r := range rows {
		send = append(send, pm.local[r*vl:(r+1)*vl]...)
	}
	counts := make([]int, p)
	for k := range counts {
		counts[k] = len(rows) * (vocab*(k+1)/p - vocab*k/p)
	}
	all := make([]float32, len(rows)*vocab)
	if err := pm.Group.Allgatherv(send, all, counts); err != nil {
		return fmt.Errorf("stage %d: gathering logits: %w", pm.Stage, err)
	}
	// all holds rank blocks of [rows][vocabulary part]; reassemble each row.
	off := 0
	for k := 0; k < p; k++ {
		v0, w := vocab*k/p, vocab*(k+1)/p-vocab*k/p
		for i := range rows {
			copy(flat[i*vocab+v0:i*vocab+v0+w], all[off+i*w:off+(i+1)*w])
		}
		off += len(rows) * w
	}
	return nil
}

// Forward runs the tokens of one sequence at positions Pos().. (in the model's own one-slot
// cache) and leaves the logits of the last one for Argmax and Logits.
func (pm *Model) Forward(tokens []int32) error {
	if pm.Stages == 1 {
		return pm.Local.Forward(tokens)
	}
	if len(tokens) == 0 {
		return fmt.Errorf("model: Forward of no tokens")
	}
	if pm.pos+len(tokens) > pm.Context() {
		return fmt.Errorf("model: %d tokens at position %d overflow the context of %d", len(tokens), pm.pos, pm.Context())
	}
	seq := []model.Seq{{Slot: 0, Pos: pm.pos, Tokens: tokens, Logits: true}}
	if err := pm.ForwardBatch(pm.Local.SingleCache(), seq); err != nil {
		return err
	}
	pm.pos += len(tokens)
	return nil
}

// Argmax returns the greedy token after the last Forward, on every rank.
func (pm *Model) Argmax() (int32, error) {
	if pm.Stages == 1 {
		return pm.Local.Argmax()
	}
	ids, err := pm.BatchArgmax(pm.Local.SingleCache())
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// Logits returns the full vocabulary's logits after the last Forward, on every rank.
func (pm *Model) Logits() ([]float32, error) {
	if pm.Stages == 1 {
		return pm.Local.Logits()
	}
	rows, err := pm.BatchLogits(pm.Local.SingleCache(), []int{0})
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}

// Reset empties the one-sequence cache of Forward.
func (pm *Model) Reset() {
	pm.pos = 0
	pm.Local.Reset()
}

// Pos returns the number of tokens in Forward's cache.
func (pm *Model) Pos() int {
	if pm.Stages == 1 {
		return pm.Local.Pos()
	}
	return pm.pos
}

// Context returns the KV cache length.
func (pm *Model) Context() int { return pm.Local.Context() }

// Generate is model.Model.Generate over the pipeline: the prompt as one pass (in
// micro-batches), then up to n tokens one at a time, emit called on every rank with each.
func (pm *Model) Generate(prompt []int32, n int, p sample.Params, emit func(id int32) (bool, error)) error {
	if pm.Stages == 1 {
		return pm.Local.Generate(prompt, n, p, emit)
	}
	return model.Generate(pm, prompt, n, p, emit)
}
