package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/pipeline"
	"github.com/gorun-hpc/gorun/llm/serve"
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
	kvType := fs.String("kv-type", "f16", "KV cache type of keys and values: "+model.KVTypeNames+" (q8_0, q4_0: ggml's blocks, as llama.cpp's)")
	typeK := fs.String("cache-type-k", "", "KV cache type of the keys (default: --kv-type)")
	typeV := fs.String("cache-type-v", "", "KV cache type of the values (default: --kv-type)")
	cacheRAM := fs.Int("cache-ram", serve.DefaultCacheRAM>>20, "MiB per rank of KV blocks kept to reuse prompt prefixes across slots (0: none, -1: no limit)")
	ppSync := fs.Bool("pp-sync", false, "with --pp: run one step at a time through the stages (no overlap of steps; for comparison)")
	noCache := fs.Bool("no-cache-prompt", false, "turn off prompt caching (a request reusing a slot's KV cache for the tokens its prompt shares with that slot's last request)")
	alias := fs.String("alias", "", "model name in the API (default: the file's base name)")
	tmpl := fs.String("chat-template", "auto", "chat template: auto (the model's tokenizer.chat_template, else a built-in matching its vocabulary), gguf, "+strings.Join(serve.BuiltinTemplateNames(), ", "))
	metrics := fs.Bool("metrics", false, "serve Prometheus metrics at /metrics (behind the API key when there is one)")
	maxBody := fs.Int64("max-body", 4<<20, "request body limit in bytes (413 beyond)")
	grace := fs.Duration("failure-grace", 2*time.Second, "after a rank fails, keep answering (/health 503, requests an error) this long before exiting")
	logRequests := fs.Bool("log-requests", false, "log every request on stderr")
	keyFlag := fs.String("api-key", "", "require this API key on /v1/* and /metrics (other users see it in ps: prefer --api-key-file or "+envAPIKey+")")
	keyFile := fs.String("api-key-file", "", "read the API key from this file (trailing newline trimmed; refused when group or others may read or write it)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this PEM certificate (chain); needs --tls-key")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	readTimeout := fs.Duration("read-timeout", serve.DefaultReadTimeout, "limit for reading a request, headers and body (0: none; headers get at most 10s)")
	writeTimeout := fs.Duration("write-timeout", serve.DefaultWriteTimeout, "limit for each write of a response, a streamed chunk or a whole answer; the model's working time does not count (0: none)")
	idleTimeout := fs.Duration("idle-timeout", serve.DefaultIdleTimeout, "close a keep-alive connection idle this long (0: never)")
	pp := addPPFlags(fs)
	maxConns := fs.Int("max-conns", serve.DefaultMaxConns, "connections open at once; more wait to be accepted (0: no cap)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile from start (loading included) to shutdown to this file (per rank: .RANK appended when ranks > 1)")
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
	if *typeK == "" {
		*typeK = *kvType
	}
	if *typeV == "" {
		*typeV = *kvType
	}
	if *cacheRAM < -1 {
		return fmt.Errorf("--cache-ram %d: want MiB >= 0, or -1 for no limit", *cacheRAM)
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", *port)
	}
	limits, err := httpLimits(*readTimeout, *writeTimeout, *idleTimeout, *maxConns)
	if err != nil {
		return err
	}
	if *keyFlag != "" && *keyFile != "" {
		return fmt.Errorf("--api-key and --api-key-file: give one")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	w, err := comm.Init()
	if err != nil {
		return fmt.Errorf("joining the job: %w", err)
	}
	defer w.Finalize()
	rank0 := w.Rank() == 0
	if *cpuprofile != "" {
		stopProfile, err := startProfile(*cpuprofile, w.Rank(), w.Size())
		if err != nil {
			return fmt.Errorf("rank %d: --cpuprofile: %w", w.Rank(), err)
		}
		defer stopProfile()
	}
	popt, err := pp.options(w.Rank(), w.Size())
	if err != nil {
		return err
	}
	// Rank 0 alone serves HTTP, so it alone reads the key and the certificate (the files need
	// not be on the other ranks' hosts). A failure here stops the job once the other ranks wait
	// for plans (returning now would leave them loading, and rank 0 in Finalize's barrier).
	var key, keyFrom string
	var tlsCfg *tls.Config
	var guardErr error
	if rank0 {
		key, keyFrom, guardErr = apiKey(*keyFlag, *keyFile, os.Getenv)
		if guardErr == nil && *tlsCert != "" {
			if tlsCfg, guardErr = serve.TLSConfig(*tlsCert, *tlsKey); guardErr != nil {
				guardErr = fmt.Errorf("--tls-cert %s, --tls-key %s: %w", *tlsCert, *tlsKey, guardErr)
			}
		}
	}
	modelPath, err := resolveModel(w, *path, &popt)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	f, err := gguf.Open(modelPath)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	defer f.Close()
	var group *serve.TimedGroup
	popt.Model = model.Options{Threads: *threads, Context: *ctx, KVType: *typeK, VType: *typeV, ExpertShares: popt.Model.ExpertShares}
	popt.Wrap = func(g model.Group) model.Group { group = serve.NewTimedGroup(g); return group }
	pm, err := pipeline.Load(w, f, popt)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	m := pm.Local
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
	cfg := limits
	cfg.ModelName, cfg.Slots, cfg.Batch, cfg.Queue, cfg.MaxBody, cfg.Metrics = name, *slots, *batch, *queue, *maxBody, *metrics
	cfg.ChatTemplate, cfg.ModelTemplate, cfg.APIKey, cfg.TLS = *tmpl, chatTemplate, key, tlsCfg
	cfg.NoPromptCache = *noCache
	if pm.Stages > 1 {
		cfg.Stepper = pm
		cfg.PipelineSync = *ppSync
	}
	switch *cacheRAM {
	case 0:
		cfg.CacheRAM = -1
	case -1:
		cfg.CacheRAM = math.MaxInt64
	default:
		cfg.CacheRAM = int64(*cacheRAM) << 20
	}
	if *logRequests {
		cfg.Log = log.New(stderr, "llm serve: ", log.LstdFlags|log.Lmicroseconds)
	}
	srv, err := serve.New(w, m, tok, group, cfg)
	if err != nil {
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
	}
	var ln net.Listener
	if rank0 {
		if guardErr == nil {
			ln, guardErr = net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
		}
		if guardErr != nil {
			// The other ranks wait for plans: tell them to stop.
			srv.Serve(canceled(), nil, 0)
			return guardErr
		}
		scheme := "http"
		if tlsCfg != nil {
			scheme = "https"
		}
		for _, line := range exposureWarnings(ln.Addr(), key != "", tlsCfg != nil) {
			fmt.Fprintln(stderr, line)
		}
		if key != "" {
			fmt.Fprintf(stderr, "llm serve: /v1/* and /metrics require the API key from %s\n", keyFrom)
		}
		kt, vt := m.KVTypes()
		fmt.Fprintf(stderr, "llm serve: %s (%s, %d rank(s), %d thread(s) each, %d slots of %d tokens, KV cache %s/%s (%d bytes per token per rank), chat template %s) on %s://%s\n",
			name, m.Cfg.Arch, w.Size(), *threads, *slots, m.Context(), kt, vt, m.KVBytesPerToken(), srv.TemplateName(), scheme, ln.Addr())
		if lay := layout(pm); lay != "" {
			fmt.Fprintln(stderr, "llm serve: "+lay)
		}
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

// startProfile starts a CPU profile into path (path.RANK when there are several ranks) and
// returns what stops it.
func startProfile(path string, rank, size int) (func(), error) {
	if size > 1 {
		path = fmt.Sprintf("%s.%d", path, rank)
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// envAPIKey holds the API key when neither --api-key nor --api-key-file is given.
const envAPIKey = "GORUN_API_KEY"

// maxKeyFile bounds what --api-key-file reads.
const maxKeyFile = 4096

// apiKey returns the API key of --api-key, --api-key-file or $GORUN_API_KEY (the first given)
// and where it came from; "" when none is given.
func apiKey(flagKey, file string, getenv func(string) string) (key, from string, err error) {
	switch {
	case flagKey != "":
		key, from = flagKey, "--api-key"
	case file != "":
		if key, err = readKeyFile(file); err != nil {
			return "", "", fmt.Errorf("--api-key-file: %w", err)
		}
		from = "--api-key-file " + file
	case getenv(envAPIKey) != "":
		key, from = getenv(envAPIKey), envAPIKey
	default:
		return "", "", nil
	}
	if err := serve.CheckAPIKey(key); err != nil {
		return "", "", fmt.Errorf("%s: %w", from, err)
	}
	return key, from, nil
}

// readKeyFile reads a key file as a secret: a regular file that neither group nor others may
// read or write, of at most maxKeyFile bytes; trailing newlines are trimmed.
func readKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %04o: group or others may read or change the key; chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return "", fmt.Errorf("%s is over %d bytes: not a key file", path, maxKeyFile)
	}
	key := strings.TrimRight(string(b), "\r\n")
	if key == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return key, nil
}

// httpLimits turns the timeout and connection flags (0: none) into a serve.Config's fields
// (negative: none). Headers get at most the default header timeout even without a read timeout.
func httpLimits(read, write, idle time.Duration, conns int) (serve.Config, error) {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"--read-timeout", read}, {"--write-timeout", write}, {"--idle-timeout", idle}} {
		if f.d < 0 {
			return serve.Config{}, fmt.Errorf("%s %v: want >= 0 (0: none)", f.name, f.d)
		}
	}
	if conns < 0 {
		return serve.Config{}, fmt.Errorf("--max-conns %d: want >= 0 (0: no cap)", conns)
	}
	off := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	header := serve.DefaultReadHeaderTimeout
	if read > 0 && read < header {
		header = read
	}
	if conns == 0 {
		conns = -1
	}
	return serve.Config{ReadHeaderTimeout: header, ReadTimeout: off(read), WriteTimeout: off(write), IdleTimeout: off(idle), MaxConns: conns}, nil
}

// exposureWarnings are the lines printed when rank 0 listens beyond loopback: loud without an
// API key (anyone who reaches the port uses the model), a note with a key but no TLS (the key
// crosses the network in clear text).
func exposureWarnings(addr net.Addr, keyed, encrypted bool) []string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || ta.IP.IsLoopback() {
		return nil
	}
	where := fmt.Sprintf("listening on %s, beyond loopback,", addr)
	if ta.IP.IsUnspecified() {
		where = fmt.Sprintf("listening on every interface (%s)", addr)
	}
	switch {
	case !keyed:
		return []string{
			"llm serve: WARNING: " + where + " without an API key:",
			"llm serve: WARNING: anyone who can reach this port can run the model and read its answers;",
			"llm serve: WARNING: give --api-key-file FILE or " + envAPIKey + ", or --host 127.0.0.1.",
		}
	case !encrypted:
		return []string{"llm serve: note: " + where + " without TLS: the API key and the conversations cross the network in clear text (--tls-cert and --tls-key, or a TLS proxy in front)"}
	}
	return nil
}
