// Package serve is an OpenAI-compatible HTTP server over a tensor-parallel model: rank 0
// answers /v1/chat/completions, /v1/completions (streaming with Server-Sent Events or not),
// /v1/models, /health, /metrics and a chat page at /, while every rank steps the model in
// lockstep, replaying the plan rank 0 broadcasts for each step (with pipeline stages, the plans
// go down the pipeline and several steps of different requests are in flight at once). Requests are batched
// continuously: each step carries one decode token of every running request and prompt
// chunks of new ones, through one matrix product per weight; each request owns a KV cache slot
// from its admission to its end (or its client's departure). Config sets the HTTP guards: an
// API key, TLS, timeouts and a cap on connections.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/serve/constrain"
	"github.com/gorun-hpc/gorun/llm/tokenizer"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config tunes a Server.
type Config struct {
	ModelName    string // the id /v1/models reports and responses carry
	Slots        int    // concurrent sequences (KV cache slots); 0: 4
	Context      int    // tokens per slot; 0: the model's KV cache length
	Batch        int    // tokens per step (decode tokens + prompt chunks); 0: 512
	Queue        int    // requests that may wait for a slot before 429; 0: 64
	MaxBody      int64  // request body limit in bytes (413 beyond); 0: 4 MiB
	Metrics      bool   // serve /metrics
	ChatTemplate string // "auto", "gguf", "llama2", "llama3" or "chatml"
	// ModelTemplate is the model's tokenizer.chat_template ("" when it has none).
	ModelTemplate string
	Log           *log.Logger // nil: no request log
	// NoPromptCache turns off prompt caching (a new request reusing the KV cache of a slot's
	// earlier request for their common prefix of tokens).
	NoPromptCache bool
	// Stepper runs the model's passes when it is not the model itself: a pipeline of stages
	// (package llm/pipeline), which runs every pass over all ranks and gives every rank its
	// results. nil: the model.
	Stepper Stepper
	// PipelineSync, with a Stepper that is a pipeline of several stages, runs one step at a
	// time over all ranks (every step pays the pipeline's fill and drain). Otherwise rank 0
	// keeps up to one step per stage in flight, each of other sequences.
	PipelineSync bool
	// CacheRAM is the memory, per rank, of the KV blocks kept for prefix caching across slots
	// (see prefix.go); 0: DefaultCacheRAM, negative: no blocks kept (a slot's own last request
	// is still reused).
	CacheRAM int64

	// APIKey, when set, is required on /v1/*, /metrics and unrouted paths, as
	// "Authorization: Bearer KEY" or "x-api-key: KEY" (401 otherwise); the chat page's files and
	// /health stay open.
	APIKey string
	// TLS, when set, makes rank 0 serve HTTPS with it (see TLSConfig).
	TLS *tls.Config
	// HTTP limits: 0 takes the Default* value, a negative one turns the limit off.
	ReadHeaderTimeout time.Duration // request line and headers
	ReadTimeout       time.Duration // the whole request, body included (408 when the body is late)
	// WriteTimeout bounds a whole response on the short routes; on the generation routes,
	// each write (each streamed chunk), not counting the time the model works.
	WriteTimeout time.Duration
	IdleTimeout  time.Duration // a keep-alive connection waiting for its next request
	MaxConns     int           // connections open at once; beyond, new ones wait to be accepted
}

// Server serves one model. Every rank makes one with the same model and configuration and
// calls Serve.
type Server struct {
	cfg     Config
	world   *comm.Comm
	m       *model.Model
	tok     *tokenizer.Tokenizer
	tmpl    *Template
	eng     *engine
	metrics *metrics
	created int64
	ids     atomic.Uint64
	// vocab is the token trie of constrained output (response_format), built once.
	vocabOnce sync.Once
	vocab     *constrain.Vocab
	handler   http.Handler
}

// New prepares a server for this rank's part of the model (world may be nil for one rank).
// group, when it is the TimedGroup the model was loaded with, reports its allreduce time.
func New(world *comm.Comm, m *model.Model, tok *tokenizer.Tokenizer, group *TimedGroup, cfg Config) (*Server, error) {
	if cfg.Slots == 0 {
		cfg.Slots = 4
	}
	if cfg.Context == 0 {
		cfg.Context = m.Context()
	}
	if cfg.Batch == 0 {
		cfg.Batch = 512
	}
	if cfg.Queue == 0 {
		cfg.Queue = 64
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 4 << 20
	}
	if cfg.ModelName == "" {
		cfg.ModelName = "model"
	}
	switch {
	case cfg.Slots < 1 || cfg.Slots > 1024:
		return nil, fmt.Errorf("serve: %d slots (want 1..1024)", cfg.Slots)
	case cfg.Batch < 1:
		return nil, fmt.Errorf("serve: batch of %d tokens (want >= 1)", cfg.Batch)
	case cfg.Queue < 1:
		return nil, fmt.Errorf("serve: queue of %d (want >= 1)", cfg.Queue)
	}
	if cfg.APIKey != "" {
		if err := CheckAPIKey(cfg.APIKey); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	cache, err := m.NewCache(cfg.Slots, cfg.Context)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	tmpl, err := NewTemplate(cfg.ChatTemplate, cfg.ModelTemplate, tok)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, world: world, m: m, tok: tok, tmpl: tmpl, metrics: newMetrics(), created: time.Now().Unix()}
	if group != nil {
		group.metrics = s.metrics
	}
	s.eng = newEngine(world, m, cache, tok, cfg.Batch, cfg.Queue, s.metrics)
	if cfg.Stepper != nil {
		s.eng.step = cfg.Stepper
		if pm, ok := cfg.Stepper.(*pipeline.Model); ok && pm.Stages > 1 && !cfg.PipelineSync {
			s.eng.pipe = pm
		}
	}
	s.eng.noPromptCache = cfg.NoPromptCache
	if cfg.CacheRAM == 0 {
		cfg.CacheRAM = DefaultCacheRAM
	}
	if !cfg.NoPromptCache && cfg.CacheRAM > 0 {
		s.eng.prefix = newPrefixCache(cfg.CacheRAM, m.KVBytesPerToken(), prefixBlock)
		s.metrics.prefixBudget.Set(float64(cfg.CacheRAM))
	}
	kt, vt := m.KVTypes()
	s.metrics.kvSlotBytes.WithLabelValues(kt, vt).Set(float64(cache.SlotBytes()))
	s.handler = s.routes()
	return s, nil
}

// Handler returns rank 0's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// TemplateName says which chat template the server renders with.
func (s *Server) TemplateName() string { return s.tmpl.Name }

// Load reports the KV cache slots in use and the requests waiting for one.
func (s *Server) Load() (active, waiting int) { return s.eng.load() }

// Health returns nil while every rank works.
func (s *Server) Health() error { return s.eng.health() }

// Serve runs this rank's part until ctx ends or a rank fails. Rank 0 serves HTTP on ln
// (ignored elsewhere; nil: no HTTP) and steps the model; the other ranks replay its plans. When ctx ends,
// rank 0 fails the requests in flight, stops the other ranks and returns nil; when a rank
// fails, the requests in flight get an error response, /health answers 503 for grace, and
// Serve returns the error.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	if s.world != nil && s.world.Rank() != 0 {
		return s.eng.work()
	}
	if ln == nil {
		return s.eng.run(ctx) // no HTTP: step until ctx ends, then stop the other ranks
	}
	srv := s.httpServer()
	httpErr := make(chan error, 1)
	go func() { httpErr <- s.serveHTTP(srv, ln) }()
	engCtx, stop := context.WithCancel(ctx)
	defer stop()
	engErr := make(chan error, 1)
	go func() { engErr <- s.eng.run(engCtx) }()
	var err error
	select {
	case err = <-engErr:
		if err != nil {
			// Keep answering (/health 503, requests an error) for a moment, so that clients
			// and supervisors see why.
			select {
			case <-time.After(grace):
			case <-ctx.Done():
			}
		}
	case err = <-httpErr:
		stop()
		if e := <-engErr; e != nil {
			err = errors.Join(err, e)
		}
	}
	shut, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(shut)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.count("chat", s.chat))
	mux.HandleFunc("POST /v1/completions", s.count("completions", s.completions))
	mux.HandleFunc("POST /v1/messages", s.count("messages", s.messages))
	mux.HandleFunc("GET /v1/models", s.count("models", s.models))
	mux.HandleFunc("GET /v1/models/{id}", s.count("models", s.model))
	mux.HandleFunc("GET /health", s.count("health", s.health))
	if s.cfg.Metrics {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	}
	open := map[string]bool{"/health": true}
	for _, p := range addStatic(mux) {
		open[p] = true
	}
	return s.authorize(mux, open)
}
