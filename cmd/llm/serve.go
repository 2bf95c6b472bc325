package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/serve"
	"github.com/gorun-hpc/gorun/llm/tp"
	"github.com/spf13/pflag"
)

func serveCmd(args []string, stdout, stderr io.Writer) error {
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(sig, args, stderr, nil)
}

// serveUntil serves until ctx ends; listening, when not nil, gets rank 0's address.
func serveUntil(sig context.Context, args []string, stderr io.Writer, listening func(addr string)) error {
	fs := pflag.NewFlagSet("llm serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.StringP("model", "m", "", "GGUF model file")
	host := fs.String("host", "127.0.0.1", "address to listen on (rank 0)")
	port := fs.Int("port", 8080, "port to listen on (0: any free port, printed at start)")
	threads := fs.IntP("threads", "t", 1, "threads per rank")
	ctx := fs.IntP("ctx-size", "c", 0, "context per request (KV cache slot) in tokens (0: the model's, at most 4096)")
	slots := fs.Int("parallel", 4, "requests decoded at once (KV cache slots)")
	batch := fs.IntP("batch-size", "b", 512, "tokens per model step (decode tokens of running requests + prompt chunks)")
	queue := fs.Int("queue", 64, "requests that may wait for a slot; beyond, 429 with Retry-After")
	kvType := fs.String("kv-type", "f16", "KV cache type: f16 (as llama.cpp) or f32")
	alias := fs.String("alias", "", "model name in the API (default: the file's base name)")
	tmpl := fs.String("chat-template", "auto", "chat template: auto (the model's tokenizer.chat_template, else a built-in matching its vocabulary), gguf, "+strings.Join(serve.BuiltinTemplateNames(), ", "))
	metrics := fs.Bool("metrics", false, "serve Prometheus metrics at /metrics")
	maxBody := fs.Int64("max-body", 4<<20, "request body limit in bytes (413 beyond)")
	grace := fs.Duration("failure-grace", 2*time.Second, "after a rank fails, keep answering (/health 503, requests an error) this long before exiting")
	logRequests := fs.Bool("log-requests", false, "log every request on stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: [gorun -n N] llm serve -m MODEL.gguf [--port 8080] [--parallel 4] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("no model: give -m FILE.gguf")
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", *port)
	}
	w, err := comm.Init()
	if err != nil {
		return fmt.Errorf("joining the job: %w", err)
	}
	defer w.Finalize()
	rank0 := w.Rank() == 0
	f, err := gguf.Open(*path)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	defer f.Close()
	group := serve.NewTimedGroup(tp.New(w))
	m, err := model.Load(f, model.Options{Group: group, Threads: *threads, Context: *ctx, KVType: *kvType})
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	m.Touch(nil)
	tok, err := model.LoadTokenizer(f)
	if err != nil {
		return err
	}
	chatTemplate, _ := f.String("tokenizer.chat_template")
	name := *alias
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(*path), ".gguf")
	}
	cfg := serve.Config{ModelName: name, Slots: *slots, Batch: *batch, Queue: *queue, MaxBody: *maxBody, Metrics: *metrics,
		ChatTemplate: *tmpl, ModelTemplate: chatTemplate}
	if *logRequests {
		cfg.Log = log.New(stderr, "llm serve: ", log.LstdFlags|log.Lmicroseconds)
	}
	srv, err := serve.New(w, m, tok, group, cfg)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	var ln net.Listener
	if rank0 {
		if ln, err = net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port))); err != nil {
			// The other ranks wait for plans: tell them to stop.
			srv.Serve(canceled(), nil, 0)
			return err
		}
		fmt.Fprintf(stderr, "llm serve: %s (%s, %d rank(s), %d thread(s) each, %d slots of %d tokens, chat template %s) on http://%s\n",
			name, m.Cfg.Arch, w.Size(), *threads, *slots, m.Context(), srv.TemplateName(), ln.Addr())
	}
	if listening != nil && ln != nil {
		listening(ln.Addr().String())
	}
	if err := srv.Serve(sig, ln, *grace); err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	if rank0 && sig.Err() != nil {
		fmt.Fprintln(stderr, "llm serve: stopped by signal")
	}
	return nil
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
