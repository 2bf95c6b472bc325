package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/sample"
	"github.com/gorun-hpc/gorun/llm/serve/constrain"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
)

// Plan opcodes, the first word of every plan rank 0 broadcasts.
const (
	opStep     = 1 // run one ForwardBatch
	opPing     = 2 // nothing to run: proves the ranks are alive while idle
	opShutdown = 3 // leave the loop
)

// Per-sequence logits handling in a plan.
const (
	rowNone   = 0 // a prompt chunk that is not the prompt's end: no logits
	rowGreedy = 1 // distributed argmax
	rowSample = 2 // full logits gathered: rank 0 samples, or reports logprobs
)

// Errors the engine gives requests.
var (
	ErrQueueFull    = errors.New("the request queue is full")
	ErrUnhealthy    = errors.New("the model's ranks have failed")
	ErrShuttingDown = errors.New("the server is shutting down")
)

// Stepper runs one pass over a cache and gives its greedy tokens and the full logits of
// chosen rows: *model.Model, or a pipeline of stages. Every rank calls it with the same plan.
type Stepper interface {
	ForwardBatch(c *model.Cache, seqs []model.Seq) error
	BatchArgmax(c *model.Cache) ([]int32, error)
	BatchLogits(c *model.Cache, rows []int) ([][]float32, error)
}

// job is one request inside the engine.
type job struct {
	ctx       context.Context
	prompt    []int32
	maxTokens int
	params    sample.Params
	stops     []string
	ignoreEOS bool
	logprobs  bool // report each token's logprob (the row's full logits are gathered)
	topK      int  // alternatives reported with each logprob
	// grammar, when set, constrains the output (response_format): matcher follows the text
	// generated so far and masks the logits of the tokens that cannot continue it.
	grammar *constrain.Grammar
	matcher *constrain.Matcher
	vocab   *constrain.Vocab
	allowed []bool
	events  chan Event

	// scheduler state (rank 0's engine goroutine only)
	slot      int
	busy      bool // in a step whose tokens have not come back
	pos       int  // tokens in the slot's cache
	fed       int  // prompt tokens fed so far
	generated []int32
	sampler   *sample.Sampler
	dec       *tokenizer.StreamDecoder
	held      string         // decoded text held back while it may begin a stop sequence
	pendLP    []TokenLogprob // logprobs of tokens whose text has not been sent yet
	stopText  string         // the stop sequence that ended the text
	cached    int            // prompt tokens found in the slot's cache (not fed again)
	start     time.Time
	first     time.Time
}

// Event is what a request receives: text as it is generated, then one final event with
// Finish (or Err) set.
type Event struct {
	Text             string
	Logprobs         []TokenLogprob // of the tokens behind Text (on the last event: any left)
	Finish           string         // "stop" or "length" on the last event
	StopText         string         // the stop sequence that ended the text, if one did
	CachedTokens     int            // prompt tokens reused from the prompt cache
	Err              error
	PromptTokens     int
	CompletionTokens int
	TTFT             time.Duration
}

// engine steps the model for all ranks: on rank 0 it schedules requests into slots, builds
// each step's plan and broadcasts it; on the others Worker replays the plans.
type engine struct {
	world    *comm.Comm
	m        *model.Model // this rank's part (its cache, its saved KV blocks)
	step     Stepper      // runs the passes: m, or the pipeline m is a stage of
	cache    *model.Cache
	tok      *tokenizer.Tokenizer
	batch    int // tokens per step
	maxQueue int
	metrics  *metrics
	idlePing time.Duration

	mu      sync.Mutex
	waiting []*job
	wake    chan struct{}
	failure error // set once: the ranks have failed
	closed  bool
	active  int // slots in use, for tests and metrics

	// noPromptCache turns prompt (prefix) caching off: every prompt is fed from position 0.
	noPromptCache bool
	// prefix indexes the blocks kept across slots (rank 0; nil: none); blocks holds this
	// rank's shard of them.
	prefix *prefixCache
	blocks blockStore

	// pipe, when set (a model of several pipeline stages), carries the steps point to point
	// and lets rank 0 keep up to pipe.Stages steps of disjoint sequences in flight (see run).
	pipe *pipeline.Model
	// maxInFlight is the most steps in flight at once so far (rank 0; tests).
	maxInFlight int

	// failAfter, when > 0, makes this rank's loop fail at that step (tests of a dying rank).
	failAfter int
	// beforeStep, when set, runs before each step on rank 0 (tests slow the steps down).
	beforeStep func()
}

func newEngine(world *comm.Comm, m *model.Model, cache *model.Cache, tok *tokenizer.Tokenizer, batch, maxQueue int, mt *metrics) *engine {
	return &engine{world: world, m: m, step: m, cache: cache, tok: tok, batch: batch, maxQueue: maxQueue, metrics: mt,
		idlePing: 2 * time.Second, wake: make(chan struct{}, 1), blocks: blockStore{}}
}

// submit queues a job; it fails at once when the queue is full or the engine is down.
func (e *engine) submit(j *job) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.failure != nil:
		return fmt.Errorf("%w: %v", ErrUnhealthy, e.failure)
	case e.closed:
		return ErrShuttingDown
	case len(e.waiting) >= e.maxQueue:
		return ErrQueueFull
	}
	// The event buffer holds every event the job can produce, so the engine never waits on a
	// slow client.
	j.events = make(chan Event, j.maxTokens+2)
	e.waiting = append(e.waiting, j)
	e.metrics.queue.Set(float64(len(e.waiting)))
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// health returns nil while the ranks work.
func (e *engine) health() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure
}

// load reports the slots in use and the requests waiting.
func (e *engine) load() (active, waiting int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active, len(e.waiting)
}

// run is rank 0's loop: it returns when ctx ends (after telling the other ranks to stop) or
// when a step fails (every request then gets the error).
func (e *engine) run(ctx context.Context) error {
	slots := make([]*job, e.cache.Slots())
	var free []int
	for s := len(slots) - 1; s >= 0; s-- {
		free = append(free, s)
	}
	fail := func(err error) {
		e.mu.Lock()
		if e.failure == nil {
			e.failure = err
		}
		e.closed = true
		queued := e.waiting
		e.waiting = nil
		e.mu.Unlock()
		for _, j := range append(queued, slots...) {
			if j != nil {
				j.events <- Event{Err: err}
			}
		}
	}
	// Each slot's cache keeps the tokens of its last job after it ends (hist); a new job takes a
	// free slot (see pick) and starts after the prefix its prompt shares with that history.
	hist := make([][]int32, len(slots))
	used := make([]int64, len(slots))
	var clock int64
	release := func(j *job) {
		slots[j.slot] = nil
		free = append(free, j.slot)
		clock++
		used[j.slot] = clock
		if e.noPromptCache {
			hist[j.slot] = nil
			return
		}
		all := append(append([]int32(nil), j.prompt...), j.generated...)
		hist[j.slot] = all[:min(j.pos, len(all))]
		if e.prefix != nil {
			e.prefix.insert(hist[j.slot], j.slot)
			e.metrics.prefixBytes.Set(float64(e.prefix.bytes()))
			e.metrics.prefixBlocks.Set(float64(e.prefix.lru.Len()))
			e.metrics.prefixEvictions.Add(float64(e.prefix.evictions))
			e.prefix.evictions = 0
		}
	}
	pick := func(j *job) {
		// The slot with the longest shared prefix when it covers over half the prompt (as
		// llama.cpp's slot similarity of 0.5), so that a short common start (a template's
		// header) does not evict a conversation; else the least recently used slot.
		best, bestN, lru := -1, 0, 0
		for k, s := range free {
			if n := commonPrefix(hist[s], j.prompt); best < 0 || n > bestN {
				best, bestN = k, n
			}
			if used[s] < used[free[lru]] {
				lru = k
			}
		}
		if 2*bestN <= len(j.prompt) {
			best, bestN = lru, commonPrefix(hist[free[lru]], j.prompt)
		}
		j.slot = free[best]
		free = append(free[:best], free[best+1:]...)
		// At least the prompt's last token is fed, for its logits.
		n := min(bestN, len(j.prompt)-1)
		fromSlot := n
		if e.prefix != nil && !e.noPromptCache {
			// Blocks of earlier requests (any slot's) beyond what this slot still holds.
			path := e.prefix.match(j.prompt)
			if sn := min(len(path)*prefixBlock, len(j.prompt)-1); sn > n {
				e.prefix.load(path[:(sn+prefixBlock-1)/prefixBlock], n/prefixBlock, j.slot)
				n = sn
			}
		}
		j.pos, j.fed, j.cached = n, n, n
		e.metrics.cachedTokens.WithLabelValues("slot").Add(float64(fromSlot))
		e.metrics.cachedTokens.WithLabelValues("blocks").Add(float64(n - fromSlot))
	}
	// Steps in flight, oldest first. With one stage (or a synchronous pipeline) a step runs
	// to its end when issued; with a pipeline of N stages up to N steps of disjoint sequences
	// are issued before the oldest one's tokens come back, so that every stage has work.
	depth := 1
	if e.pipe != nil {
		depth = e.pipe.Stages
	}
	var flights []*flight
	finish := func(f *flight) error {
		ids, logits, err := f.results()
		if err != nil {
			return err
		}
		if len(ids) != len(f.rows) || len(logits) != len(f.rows) {
			return fmt.Errorf("step %d: %d tokens and %d logits rows for %d rows", f.pass, len(ids), len(logits), len(f.rows))
		}
		e.metrics.step.Observe(time.Since(f.t0).Seconds())
		for i, q := range f.seqs {
			f.owners[i].pos += len(q.Tokens)
			f.owners[i].busy = false
		}
		for k, j := range f.rows {
			var id int32
			switch {
			case j.matcher != nil:
				id = e.constrained(j, logits[k])
			case j.sampler != nil:
				id = j.sampler.Sample(logits[k], nil)
			default:
				id = ids[k]
			}
			var lp *TokenLogprob
			if j.logprobs && logits[k] != nil {
				l := tokenLogprob(e.tok, logits[k], id, j.topK)
				lp = &l
			}
			if done := e.emit(j, id, lp); done {
				release(j)
			}
		}
		return nil
	}
	// drain waits for the steps still in flight (their sends complete before the ranks stop).
	drain := func() {
		for _, f := range flights {
			f.results()
		}
		flights = nil
	}
	shutdown := func() error {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		fail(ErrShuttingDown)
		if err := e.send([]int32{opShutdown}); err != nil {
			return fmt.Errorf("telling the ranks to stop: %w", err)
		}
		drain()
		return nil
	}
	step := 0
	for {
		if ctx.Err() != nil {
			return shutdown()
		}
		// The steps whose tokens have come back, oldest first (they come back in order).
		for len(flights) > 0 && flights[0].ready() {
			f := flights[0]
			flights = flights[1:]
			if err := finish(f); err != nil {
				fail(err)
				return err
			}
		}
		// Admit waiting jobs into free slots; drop the cancelled ones at once.
		e.mu.Lock()
		kept := e.waiting[:0]
		for _, j := range e.waiting {
			switch {
			case j.ctx.Err() != nil:
				j.events <- Event{Err: j.ctx.Err()}
			case len(free) > 0:
				pick(j)
				slots[j.slot] = j
				j.start = time.Now()
				j.dec = e.tok.NewStreamDecoder()
				if j.params.Temperature > 0 {
					j.sampler = sample.New(j.params)
				}
			default:
				kept = append(kept, j)
			}
		}
		clear(e.waiting[len(kept):])
		e.waiting = kept
		for _, j := range slots {
			// A job in flight is released when its step comes back (its slot's cache is in use
			// on the stages until then).
			if j != nil && !j.busy && j.ctx.Err() != nil {
				e.metrics.cancelled.Inc()
				release(j) // the client left: its slot is free for the next job at once
			}
		}
		e.active = len(slots) - len(free)
		e.metrics.queue.Set(float64(len(e.waiting)))
		e.metrics.active.Set(float64(e.active))
		e.metrics.inFlight.Set(float64(len(flights)))
		e.mu.Unlock()

		if len(flights) < depth {
			if plan, seqs, owners, rows := e.plan(slots, depth); len(seqs) > 0 {
				step++
				if e.beforeStep != nil {
					e.beforeStep()
				}
				f, err := e.issue(plan, step, seqs, owners, rows)
				if err != nil {
					fail(err)
					return err
				}
				if len(flights) > 0 {
					e.metrics.overlapped.Inc()
				}
				flights = append(flights, f)
				e.mu.Lock()
				e.maxInFlight = max(e.maxInFlight, len(flights))
				e.mu.Unlock()
				continue
			}
		}
		if len(flights) > 0 {
			select {
			case <-ctx.Done():
			case <-e.wake:
			case <-flights[0].done():
			}
			continue
		}
		select {
		case <-ctx.Done():
			return shutdown()
		case <-e.wake:
			continue
		case <-time.After(e.idlePing):
			if err := e.send([]int32{opPing}); err != nil {
				fail(err)
				return err
			}
			continue
		}
	}
}

// flight is a step issued and not yet finished on rank 0.
type flight struct {
	pass    int
	seqs    []model.Seq
	owners  []*job // the job of each sequence
	rows    []*job // the jobs of the logits rows, in order
	sampled []int  // the rows whose full logits come back
	t0      time.Time
	res     *pipeline.Results // the results to come (overlapped pipeline); nil: ids and logits
	ids     []int32
	logits  [][]float32
}

// closed is a channel that is always ready (a step run to its end when issued).
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (f *flight) done() <-chan struct{} {
	if f.res == nil {
		return closed
	}
	return f.res.Done()
}

func (f *flight) ready() bool {
	select {
	case <-f.done():
		return true
	default:
		return false
	}
}

// results waits for the step's greedy tokens and its logits rows (nil where not sampled).
func (f *flight) results() ([]int32, [][]float32, error) {
	if f.res == nil {
		return f.ids, f.logits, nil
	}
	ids, rows, err := f.res.Wait()
	if err != nil {
		return nil, nil, err
	}
	if len(rows) != len(f.sampled) {
		return nil, nil, fmt.Errorf("step %d: %d logits rows back, %d asked", f.pass, len(rows), len(f.sampled))
	}
	logits := make([][]float32, len(f.rows))
	for k, r := range f.sampled {
		logits[r] = rows[k]
	}
	return ids, logits, nil
}

// issue starts a step. Synchronously (one stage, or a synchronous pipeline) it broadcasts the
// plan and runs it to its end on every rank. Overlapped, rank 0 posts the receives of the
// step's results, hands the plan down the pipeline and runs its own stage of it; the step's
// tokens come back later (flight.done).
func (e *engine) issue(plan []int32, step int, seqs []model.Seq, owners, rows []*job) (*flight, error) {
	f := &flight{pass: step, seqs: seqs, owners: owners, rows: rows, t0: time.Now()}
	for _, o := range owners {
		o.busy = true
	}
	if e.pipe == nil {
		var err error
		f.ids, f.logits, err = e.execute(plan, step)
		return f, err
	}
	if e.failAfter > 0 && step >= e.failAfter {
		return nil, fmt.Errorf("rank %d: injected failure at step %d", e.rank(), step)
	}
	_, modes, _, err := decodePlan(plan)
	if err != nil {
		return nil, err
	}
	f.sampled = sampledRows(modes)
	f.res = e.pipe.PostResults(int32(step), len(rows), len(f.sampled))
	if err := e.pipe.SendPlan(plan); err != nil {
		return nil, err
	}
	if _, _, err := e.forward(plan); err != nil {
		return nil, err
	}
	return f, nil
}

// plan chooses this step's work among the jobs not in flight: one decode token for every
// running job, then prompt chunks of jobs still reading their prompt, up to the batch budget.
// With depth steps in flight (a pipeline's stages), a step takes at most 1/depth of the
// running jobs' decode tokens, so that the others make the next steps. owners are the jobs of
// seqs; rows the jobs whose logits the step yields, in the order of their logits rows.
func (e *engine) plan(slots []*job, depth int) (plan []int32, seqs []model.Seq, owners, rows []*job) {
	budget := e.batch
	decoding := 0
	for _, j := range slots {
		if j != nil && j.fed >= len(j.prompt) {
			decoding++
		}
	}
	limit := (decoding + depth - 1) / depth
	for _, j := range slots {
		if j == nil || j.busy || j.fed < len(j.prompt) || len(seqs) >= limit {
			continue
		}
		seqs = append(seqs, model.Seq{Slot: j.slot, Pos: j.pos, Tokens: j.generated[len(j.generated)-1:], Logits: true})
		owners = append(owners, j)
		budget--
	}
	for _, j := range slots {
		if j == nil || j.busy || j.fed >= len(j.prompt) || budget <= 0 {
			continue
		}
		n := min(len(j.prompt)-j.fed, budget)
		seqs = append(seqs, model.Seq{Slot: j.slot, Pos: j.pos, Tokens: j.prompt[j.fed : j.fed+n], Logits: j.fed+n == len(j.prompt)})
		owners = append(owners, j)
		j.fed += n
		budget -= n
	}
	if len(seqs) == 0 {
		return nil, nil, nil, nil
	}
	var ops []int32
	if e.prefix != nil {
		ops = e.prefix.take()
	}
	plan = append(plan, opStep, int32(len(seqs)), int32(len(ops)))
	for i, q := range seqs {
		mode := int32(rowNone)
		if q.Logits {
			rows = append(rows, owners[i])
			mode = rowGreedy
			if o := owners[i]; o.sampler != nil || o.logprobs || o.matcher != nil {
				mode = rowSample
			}
		}
		plan = append(plan, int32(q.Slot), int32(q.Pos), int32(len(q.Tokens)), mode)
	}
	plan = append(plan, ops...)
	for _, q := range seqs {
		plan = append(plan, q.Tokens...)
	}
	return plan, seqs, owners, rows
}

// decodePlan turns a broadcast plan back into sequences, row modes and the block operations
// to run before them (5 words each), checking every count.
func decodePlan(plan []int32) ([]model.Seq, []int32, []int32, error) {
	if len(plan) < 3 || plan[0] != opStep {
		return nil, nil, nil, fmt.Errorf("plan: bad header %v", plan[:min(len(plan), 3)])
	}
	n, nops := int(plan[1]), int(plan[2])
	if n < 1 || nops < 0 || nops%5 != 0 || 3+4*n > len(plan) || nops > len(plan)-3-4*n {
		return nil, nil, nil, fmt.Errorf("plan: %d sequences and %d words of block operations in %d words", n, nops, len(plan))
	}
	seqs := make([]model.Seq, n)
	modes := make([]int32, n)
	ops := plan[3+4*n : 3+4*n+nops]
	tok := 3 + 4*n + nops
	for i := range seqs {
		h := plan[3+4*i : 3+4*i+4]
		nt := int(h[2])
		if nt < 1 || nt > len(plan)-tok || h[3] < rowNone || h[3] > rowSample {
			return nil, nil, nil, fmt.Errorf("plan: sequence %d header %v does not fit %d words", i, h, len(plan))
		}
		seqs[i] = model.Seq{Slot: int(h[0]), Pos: int(h[1]), Tokens: plan[tok : tok+nt], Logits: h[3] != rowNone}
		modes[i] = h[3]
		tok += nt
	}
	if tok != len(plan) {
		return nil, nil, nil, fmt.Errorf("plan: %d words left over", len(plan)-tok)
	}
	return seqs, modes, ops, nil
}

// send gives every rank a plan without a step (ping, shutdown): down the pipeline when steps
// overlap, else broadcast.
func (e *engine) send(plan []int32) error {
	if e.pipe != nil {
		return e.pipe.SendPlan(plan)
	}
	return e.broadcast(plan)
}

// broadcast sends a plan from rank 0 to every rank (length, then the words).
func (e *engine) broadcast(plan []int32) error {
	if e.world == nil || e.world.Size() == 1 {
		return nil
	}
	n := []int32{int32(len(plan))}
	if err := collectives.Bcast(e.world, n, 0); err != nil {
		return fmt.Errorf("broadcasting a plan: %w", err)
	}
	if err := collectives.Bcast(e.world, plan, 0); err != nil {
		return fmt.Errorf("broadcasting a plan: %w", err)
	}
	return nil
}

// receive is broadcast's other side.
func (e *engine) receive() ([]int32, error) {
	n := []int32{0}
	if err := collectives.Bcast(e.world, n, 0); err != nil {
		return nil, fmt.Errorf("receiving a plan from rank 0: %w", err)
	}
	if n[0] < 1 || n[0] > 1<<26 {
		return nil, fmt.Errorf("receiving a plan from rank 0: length %d", n[0])
	}
	plan := make([]int32, n[0])
	if err := collectives.Bcast(e.world, plan, 0); err != nil {
		return nil, fmt.Errorf("receiving a plan from rank 0: %w", err)
	}
	return plan, nil
}

// execute broadcasts a step plan from rank 0 and runs it there.
func (e *engine) execute(plan []int32, step int) ([]int32, [][]float32, error) {
	if e.failAfter > 0 && step >= e.failAfter {
		return nil, nil, fmt.Errorf("rank %d: injected failure at step %d", e.rank(), step)
	}
	if err := e.broadcast(plan); err != nil {
		return nil, nil, err
	}
	return e.runStep(plan)
}

// runStep runs one step plan on this rank: the batch, the greedy tokens of every logits row, and
// the full logits of the rows that sample (nil for the others). Every rank calls it with the
// same plan, so the collectives inside match.
func (e *engine) runStep(plan []int32) ([]int32, [][]float32, error) {
	rows, sampled, err := e.forward(plan)
	if err != nil {
		return nil, nil, err
	}
	ids, err := e.step.BatchArgmax(e.cache)
	if err != nil {
		return nil, nil, err
	}
	logits := make([][]float32, rows)
	if len(sampled) > 0 {
		gathered, err := e.step.BatchLogits(e.cache, sampled)
		if err != nil {
			return nil, nil, err
		}
		for k, r := range sampled {
			logits[r] = gathered[k]
		}
	}
	return ids, logits, nil
}

// forward runs a step plan's block operations and pass on this rank (with a pipeline, its
// stage of the pass) and returns the pass's logits rows and which of them sample.
func (e *engine) forward(plan []int32) (rows int, sampled []int, err error) {
	seqs, modes, ops, err := decodePlan(plan)
	if err != nil {
		return 0, nil, err
	}
	if err := e.blocks.apply(e.m, e.cache, ops); err != nil {
		return 0, nil, err
	}
	if err := e.step.ForwardBatch(e.cache, seqs); err != nil {
		return 0, nil, err
	}
	for _, md := range modes {
		if md != rowNone {
			rows++
		}
	}
	return rows, sampledRows(modes), nil
}

// sampledRows are the logits rows, among a plan's, whose full logits rank 0 needs.
func sampledRows(modes []int32) []int {
	var sampled []int
	row := 0
	for _, md := range modes {
		if md == rowSample {
			sampled = append(sampled, row)
		}
		if md != rowNone {
			row++
		}
	}
	return sampled
}

func (e *engine) rank() int {
	if e.world == nil {
		return 0
	}
	return e.world.Rank()
}

// work is the loop of ranks other than 0: replay every plan until told to stop. With overlapped
// pipeline steps each plan comes from the previous stage (from rank 0 in stage 0) and goes on
// to the next before this rank runs its stage of the step, and the last stage sends the step's
// results to rank 0; every rank runs the steps in the order rank 0 issued them.
func (e *engine) work() error {
	next := e.receive
	run := func(step int, plan []int32) error {
		_, _, err := e.runStep(plan)
		return err
	}
	if e.pipe != nil {
		next = func() ([]int32, error) {
			plan, err := e.pipe.RecvPlan()
			if err != nil {
				return nil, err
			}
			return plan, e.pipe.SendPlan(plan)
		}
		run = func(step int, plan []int32) error {
			_, sampled, err := e.forward(plan)
			if err != nil {
				return err
			}
			return e.pipe.SendResults(int32(step), sampled)
		}
	}
	step := 0
	for {
		plan, err := next()
		if err != nil {
			return err
		}
		switch plan[0] {
		case opShutdown:
			return nil
		case opPing:
			continue
		}
		step++
		if e.failAfter > 0 && step >= e.failAfter {
			return fmt.Errorf("rank %d: injected failure at step %d", e.rank(), step)
		}
		if err := run(step, plan); err != nil {
			return err
		}
	}
}

// constrained picks a job's token among those its grammar allows (greedy, or by its
// sampler), from a masked copy of the row (the logprobs stay the model's own), and advances
// the matcher. When no token fits (a vocabulary that cannot spell the continuation), the
// output ends with an end-of-generation token.
func (e *engine) constrained(j *job, row []float32) int32 {
	if j.matcher.Allowed(j.vocab, j.allowed) == 0 {
		return e.tok.EOS()
	}
	masked := append([]float32(nil), row...)
	constrain.Apply(masked, j.allowed)
	var id int32
	if j.sampler != nil {
		id = j.sampler.Sample(masked, nil)
	} else {
		id = sample.Argmax(masked)
	}
	if !e.tok.IsEOG(id) {
		j.matcher.Accept([]byte(e.tok.TokenPiece(id)))
	}
	return id
}

// emit hands the job its new token and reports whether the job is finished.
func (e *engine) emit(j *job, id int32, lp *TokenLogprob) bool {
	now := time.Now()
	if len(j.generated) == 0 {
		j.first = now
		e.metrics.ttft.Observe(now.Sub(j.start).Seconds())
		e.metrics.promptTokens.Add(float64(len(j.prompt)))
	}
	j.generated = append(j.generated, id)
	e.metrics.genTokens.Inc()
	finish := ""
	if e.tok.IsEOG(id) && !j.ignoreEOS {
		finish = "stop"
	} else {
		if lp != nil {
			j.pendLP = append(j.pendLP, *lp)
		}
		text := j.held + j.dec.Add(id)
		// The slot has room for the next token to be fed back, or the job ends here.
		if len(j.generated) >= j.maxTokens || j.pos >= e.cache.Context() {
			text += j.dec.Flush()
			finish = "length"
		}
		out, held, stopped := cutStop(text, j.stops, finish != "")
		if stopped {
			finish = "stop"
			j.stopText = whichStop(text, j.stops)
		}
		j.held = held
		if out != "" {
			j.events <- Event{Text: out, Logprobs: j.pendLP}
			j.pendLP = nil
		}
	}
	if finish == "" {
		return false
	}
	n := len(j.generated)
	if finish == "stop" && e.tok.IsEOG(id) {
		n-- // the end-of-generation token is not part of the completion
	}
	if d := now.Sub(j.first).Seconds(); n > 1 && d > 0 {
		e.metrics.tps.Observe(float64(n-1) / d)
	}
	j.events <- Event{Finish: finish, StopText: j.stopText, CachedTokens: j.cached, Logprobs: j.pendLP, PromptTokens: len(j.prompt), CompletionTokens: n, TTFT: j.first.Sub(j.start)}
	return true
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// whichStop is the stop sequence found first in text (the one cutStop cut at).
func whichStop(text string, stops []string) string {
	cut, which := -1, ""
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (cut < 0 || i < cut) {
			cut, which = i, s
		}
	}
	return which
}

// cutStop finds the first stop sequence in text. Without one, it returns the text that can be
// sent and holds back a tail that may be the start of a stop sequence (all of it is sent when
// final).
func cutStop(text string, stops []string, final bool) (out, held string, stopped bool) {
	cut := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		return text[:cut], "", true
	}
	if final {
		return text, "", false
	}
	keep := 0
	for _, s := range stops {
		for k := min(len(s)-1, len(text)); k > keep; k-- {
			if strings.HasSuffix(text, s[:k]) {
				keep = k
				break
			}
		}
	}
	return text[:len(text)-keep], text[len(text)-keep:], false
}
