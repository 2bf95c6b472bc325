package serve

import (
	"time"

	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series, in a registry of its own (so that several
// servers can live in one process, as in tests).
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	promptTokens prometheus.Counter
	genTokens    prometheus.Counter
	cancelled    prometheus.Counter
	ttft         prometheus.Histogram
	tps          prometheus.Histogram
	step         prometheus.Histogram
	queue        prometheus.Gauge
	active       prometheus.Gauge
	inFlight     prometheus.Gauge
	overlapped   prometheus.Counter
	allreduce    prometheus.Counter
	// prompt caching
	cachedTokens    *prometheus.CounterVec
	prefixBytes     prometheus.Gauge
	prefixBlocks    prometheus.Gauge
	prefixBudget    prometheus.Gauge
	prefixEvictions prometheus.Counter
	kvSlotBytes     *prometheus.GaugeVec
}

func newMetrics() *metrics {
	const ns = "gorun_llm"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "prompt_tokens_total",
			Help: "Prompt tokens processed."}),
		genTokens: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "generated_tokens_total",
			Help: "Tokens generated."}),
		cancelled: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "cancelled_requests_total",
			Help: "Requests whose client went away during generation (their KV slot was freed)."}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help: "Time from a request's admission to a slot to its first generated token.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		tps: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "request_tokens_per_second",
			Help: "Decode rate of each finished request (tokens after the first over their time).", Buckets: prometheus.ExponentialBuckets(0.5, 2, 18)}),
		step: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "step_seconds",
			Help: "Time of one batched model step on all ranks, from its issue to its tokens.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth",
			Help: "Requests waiting for a KV cache slot."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "active_slots",
			Help: "KV cache slots in use."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "steps_in_flight",
			Help: "Steps issued into the pipeline whose tokens have not come back (at most the pipeline's stages)."}),
		overlapped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "overlapped_steps_total",
			Help: "Steps issued while an earlier step was still in the pipeline."}),
		allreduce: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "allreduce_seconds_total",
			Help: "Time rank 0 spent in the tensor-parallel allreduces."}),
		cachedTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "prompt_cached_tokens_total",
			Help: "Prompt tokens not fed because their KV entries were reused: from the slot's own last request (slot) or from blocks kept across slots (blocks)."}, []string{"source"}),
		prefixBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "prefix_cache_bytes",
			Help: "KV memory of the prefix cache's blocks on rank 0 (every rank holds its shard)."}),
		prefixBlocks: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "prefix_cache_blocks",
			Help: "Blocks in the prefix cache."}),
		prefixBudget: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "prefix_cache_budget_bytes",
			Help: "The prefix cache's memory budget per rank (--cache-ram)."}),
		prefixEvictions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "prefix_cache_evictions_total",
			Help: "Blocks evicted from the prefix cache (least recently used first) to stay within its budget."}),
		kvSlotBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "kv_cache_slot_bytes",
			Help: "KV cache memory of one slot on rank 0, by key and value type."}, []string{"type_k", "type_v"}),
	}
	m.reg.MustRegister(m.requests, m.promptTokens, m.genTokens, m.cancelled, m.ttft, m.tps, m.step, m.queue, m.active, m.inFlight, m.overlapped, m.allreduce,
		m.cachedTokens, m.prefixBytes, m.prefixBlocks, m.prefixBudget, m.prefixEvictions, m.kvSlotBytes)
	return m
}

// TimedGroup wraps a tensor-parallel group to count the time spent in its allreduces (the
// /metrics series gorun_llm_allreduce_seconds_total). Pass it to model.Load.
type TimedGroup struct {
	model.Group
	metrics *metrics
}

// NewTimedGroup wraps g; its time is reported once the group is given to a Server.
func NewTimedGroup(g model.Group) *TimedGroup { return &TimedGroup{Group: g} }

// AllreduceSum times the wrapped group's AllreduceSum.
func (g *TimedGroup) AllreduceSum(x []float32) error {
	t0 := time.Now()
	err := g.Group.AllreduceSum(x)
	if m := g.metrics; m != nil {
		m.allreduce.Add(time.Since(t0).Seconds())
	}
	return err
}
