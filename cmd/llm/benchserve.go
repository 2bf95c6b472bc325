package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
)

// serveLevel is bench-serve's result at one concurrency.
type serveLevel struct {
	URL          string  `json:"url"`
	Model        string  `json:"model"`
	Concurrency  int     `json:"concurrency"`
	Requests     int     `json:"requests"`
	Errors       int     `json:"errors"`
	PromptTokens int     `json:"prompt_tokens"`
	GenTokens    int     `json:"generated_tokens"`
	WallS        float64 `json:"wall_s"`
	Throughput   float64 `json:"throughput_tokens_per_s"` // generated tokens / wall time
	TTFTMeanMs   float64 `json:"ttft_mean_ms"`
	TTFTP50Ms    float64 `json:"ttft_p50_ms"`
	TTFTP90Ms    float64 `json:"ttft_p90_ms"`
	ReqTPSMean   float64 `json:"request_tokens_per_s_mean"` // per request: tokens after the first / their time
	FirstError   string  `json:"first_error,omitempty"`
}

// serveResult is one streamed request's timings.
type serveResult struct {
	ttft, total  time.Duration
	tokens       int
	promptTokens int
	err          error
}

func benchServe(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("llm bench-serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "server base URL (llm serve, llama-server or any OpenAI-compatible server)")
	levels := fs.String("concurrency", "1,4,16", "comma-separated numbers of concurrent clients")
	requests := fs.Int("requests", 0, "requests per concurrency level (0: 2 x the concurrency, at least 4)")
	maxTokens := fs.IntP("n-predict", "n", 64, "tokens to generate per request (ignore_eos is set, so each request generates exactly this many)")
	promptWords := fs.IntP("prompt-words", "p", 32, "words in each prompt (each prompt is distinct, so no server can reuse another's cache)")
	modelName := fs.String("model", "", "model name to send (default: the first of /v1/models)")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit for each request")
	output := fs.StringP("output", "o", "md", "md (table) or json (one object per level)")
	warmup := fs.Bool("warmup", true, "send one untimed request first")
	multiTurn := fs.Int("multi-turn", 0, "instead: time the second turn of chats whose first turn has a history of about this many words (prompt caching); --requests chats, one at a time")
	interleave := fs.Bool("interleave", false, "with --multi-turn: send an unrelated short chat between the two turns (on a server with one slot it takes that slot, so the second turn's cache must come from KV blocks kept across slots)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: llm bench-serve [--url http://127.0.0.1:8080] [--concurrency 1,4,16] [-n 64] [flags]\n")
		fmt.Fprintf(stderr, "(a server that wants an API key gets $%s as a Bearer token)\n\n", envAPIKey)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *output != "md" && *output != "json" {
		return fmt.Errorf("-o %q: want md or json", *output)
	}
	var conc []int
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("--concurrency: %q is not a number of clients in 1..1024", f)
		}
		conc = append(conc, n)
	}
	if *maxTokens < 1 || *promptWords < 1 || *requests < 0 {
		return fmt.Errorf("-n and -p must be >= 1, --requests >= 0")
	}
	base := strings.TrimRight(*url, "/")
	// A connection per request: servers differ in how long they keep idle connections, and a
	// request racing a server's close of an idle one would count as an error.
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	if key := os.Getenv(envAPIKey); key != "" {
		client.Transport = bearer{client.Transport, key}
	}
	name := *modelName
	if name == "" {
		var err error
		if name, err = firstModel(client, base); err != nil {
			return err
		}
	}
	// One untimed request first, so that page faults and lazy setup do not count.
	if *warmup {
		if r := streamCompletion(client, base, name, benchPrompt(-1, *promptWords), *maxTokens); r.err != nil {
			return fmt.Errorf("warm-up request: %w", r.err)
		}
	}
	if *multiTurn > 0 {
		n := max(*requests, 1)
		mt, err := runMultiTurn(client, base, name, n, *multiTurn, *maxTokens, *interleave)
		if err != nil {
			return err
		}
		if *output == "json" {
			return json.NewEncoder(stdout).Encode(mt)
		}
		fmt.Fprintf(stdout, "| model | chats | history words | turn-2 prompt tok | cached tok | TTFT turn 1 ms | TTFT turn 2 ms | turn 2 / turn 1 |\n")
		fmt.Fprintf(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %d | %.1f | %.1f | %.3f |\n", mt.Model, mt.Chats, mt.HistoryWords, mt.Turn2Prompt, mt.Turn2Cached,
			mt.TTFT1Ms, mt.TTFT2Ms, mt.TTFT2Ms/mt.TTFT1Ms)
		return nil
	}
	var rows []serveLevel
	for _, c := range conc {
		n := *requests
		if n == 0 {
			n = max(2*c, 4)
		}
		rows = append(rows, runLevel(client, base, name, c, n, *promptWords, *maxTokens))
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else {
		fmt.Fprintf(stdout, "| model | clients | requests | errors | prompt tok | gen tok | wall s | throughput t/s | TTFT mean ms | TTFT p50 ms | TTFT p90 ms | per-request t/s |\n")
		fmt.Fprintf(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, r := range rows {
			fmt.Fprintf(stdout, "| %s | %d | %d | %d | %d | %d | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f |\n", r.Model, r.Concurrency, r.Requests,
				r.Errors, r.PromptTokens, r.GenTokens, r.WallS, r.Throughput, r.TTFTMeanMs, r.TTFTP50Ms, r.TTFTP90Ms, r.ReqTPSMean)
		}
	}
	for _, r := range rows {
		if r.Errors > 0 {
			return fmt.Errorf("%d of %d requests at concurrency %d failed; first: %s", r.Errors, r.Requests, r.Concurrency, r.FirstError)
		}
	}
	return nil
}

func firstModel(client *http.Client, base string) (string, error) {
	resp, err := client.Get(base + "/v1/models")
	if err != nil {
		return "", fmt.Errorf("listing models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 || len(list.Data) == 0 {
		return "", fmt.Errorf("listing models: status %s, %d models, %v", resp.Status, len(list.Data), err)
	}
	return list.Data[0].ID, nil
}

// benchPrompt is request i's prompt: words of a fixed text after a distinct request number.
func benchPrompt(i, words int) string {
	text := strings.Fields("Once upon a time there was a little girl named Lily who loved to play outside in the park with her dog and her friends every day")
	var b strings.Builder
	fmt.Fprintf(&b, "Story %d.", i+1)
	for k := 0; k < words-2; k++ {
		b.WriteString(" ")
		b.WriteString(text[k%len(text)])
	}
	return b.String()
}

func runLevel(client *http.Client, base, name string, conc, n, words, maxTokens int) serveLevel {
	results := make([]serveResult, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < conc; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				results[i] = streamCompletion(client, base, name, benchPrompt(i, words), maxTokens)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	lv := serveLevel{URL: base, Model: name, Concurrency: conc, Requests: n, WallS: wall.Seconds()}
	var ttfts []float64
	var tps float64
	ok := 0
	for _, r := range results {
		if r.err != nil {
			lv.Errors++
			if lv.FirstError == "" {
				lv.FirstError = r.err.Error()
			}
			continue
		}
		ok++
		lv.GenTokens += r.tokens
		lv.PromptTokens += r.promptTokens
		ttfts = append(ttfts, float64(r.ttft)/1e6)
		if d := (r.total - r.ttft).Seconds(); r.tokens > 1 && d > 0 {
			tps += float64(r.tokens-1) / d
		}
	}
	lv.Throughput = float64(lv.GenTokens) / wall.Seconds()
	if ok > 0 {
		slices.Sort(ttfts)
		for _, v := range ttfts {
			lv.TTFTMeanMs += v / float64(ok)
		}
		lv.TTFTP50Ms = ttfts[(ok-1)/2]
		lv.TTFTP90Ms = ttfts[min(ok-1, ok*9/10)]
		lv.ReqTPSMean = tps / float64(ok)
	}
	return lv
}

// streamCompletion sends one streaming /v1/completions request and times its chunks.
func streamCompletion(client *http.Client, base, name, prompt string, maxTokens int) serveResult {
	body, _ := json.Marshal(map[string]any{"model": name, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0,
		"stream": true, "ignore_eos": true, "cache_prompt": false, "stream_options": map[string]any{"include_usage": true}})
	start := time.Now()
	resp, err := client.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return serveResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return serveResult{err: fmt.Errorf("status %s: %s", resp.Status, bytes.TrimSpace(b))}
	}
	var r serveResult
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return serveResult{err: fmt.Errorf("bad chunk %q: %w", data, err)}
		}
		if ch.Error != nil {
			return serveResult{err: fmt.Errorf("server error: %s", ch.Error.Message)}
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
			if chunks == 0 {
				r.ttft = time.Since(start)
			}
			chunks++
		}
		if ch.Usage != nil {
			r.tokens, r.promptTokens = ch.Usage.Completion, ch.Usage.Prompt
		}
	}
	if err := sc.Err(); err != nil {
		return serveResult{err: err}
	}
	r.total = time.Since(start)
	if r.tokens == 0 {
		r.tokens = chunks // servers that send no usage send a chunk per token
	}
	if chunks == 0 {
		return serveResult{err: fmt.Errorf("no text streamed")}
	}
	return r
}

// bearer sends an API key with every request.
type bearer struct {
	http.RoundTripper
	key string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.RoundTripper.RoundTrip(r)
}

// multiTurn is bench-serve --multi-turn's result: mean time to first token of each turn.
type multiTurn struct {
	URL          string  `json:"url"`
	Model        string  `json:"model"`
	Chats        int     `json:"chats"`
	HistoryWords int     `json:"history_words"`
	Interleaved  bool    `json:"interleaved"`
	Turn1Prompt  int     `json:"turn1_prompt_tokens"`
	Turn2Prompt  int     `json:"turn2_prompt_tokens"`
	Turn2Cached  int     `json:"turn2_cached_tokens"`
	TTFT1Ms      float64 `json:"ttft_turn1_ms"`
	TTFT2Ms      float64 `json:"ttft_turn2_ms"`
}

// runMultiTurn runs chats of two turns, the second repeating the first's history and answer:
// a server with prompt caching feeds only the new tokens of the second.
func runMultiTurn(client *http.Client, base, name string, chats, words, maxTokens int, interleave bool) (multiTurn, error) {
	mt := multiTurn{URL: base, Model: name, Chats: chats, HistoryWords: words, Interleaved: interleave}
	for c := 0; c < chats; c++ {
		// A distinct history per chat (its first word), so no chat reuses another's.
		msgs := []map[string]any{{"role": "system", "content": "You tell stories."}, {"role": "user", "content": benchPrompt(1000+c, words)}}
		r1, answer := streamChat(client, base, name, msgs, maxTokens)
		if r1.err != nil {
			return mt, fmt.Errorf("chat %d, turn 1: %w", c, r1.err)
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": answer}, map[string]any{"role": "user", "content": "And then what happened?"})
		if interleave {
			other := []map[string]any{{"role": "user", "content": benchPrompt(5000+c, 16)}}
			if r, _ := streamChat(client, base, name, other, 4); r.err != nil {
				return mt, fmt.Errorf("chat %d, the request between the turns: %w", c, r.err)
			}
		}
		r2, _ := streamChat(client, base, name, msgs, maxTokens)
		if r2.err != nil {
			return mt, fmt.Errorf("chat %d, turn 2: %w", c, r2.err)
		}
		mt.TTFT1Ms += float64(r1.ttft) / 1e6 / float64(chats)
		mt.TTFT2Ms += float64(r2.ttft) / 1e6 / float64(chats)
		mt.Turn1Prompt, mt.Turn2Prompt, mt.Turn2Cached = r1.promptTokens, r2.promptTokens, r2.cached
	}
	return mt, nil
}

// streamChat sends one streaming chat request, timing its first text, and returns the text.
func streamChat(client *http.Client, base, name string, msgs []map[string]any, maxTokens int) (chatResult, string) {
	body, _ := json.Marshal(map[string]any{"model": name, "messages": msgs, "max_tokens": maxTokens, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	start := time.Now()
	resp, err := client.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return chatResult{err: err}, ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return chatResult{err: fmt.Errorf("status %s: %s", resp.Status, bytes.TrimSpace(b))}, ""
	}
	var r chatResult
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				Prompt  int `json:"prompt_tokens"`
				Details *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return chatResult{err: fmt.Errorf("bad chunk %q: %w", data, err)}, ""
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			if text.Len() == 0 {
				r.ttft = time.Since(start)
			}
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if ch.Usage != nil {
			r.promptTokens = ch.Usage.Prompt
			if ch.Usage.Details != nil {
				r.cached = ch.Usage.Details.Cached
			}
		}
	}
	if err := sc.Err(); err != nil {
		return chatResult{err: err}, ""
	}
	if text.Len() == 0 {
		return chatResult{err: fmt.Errorf("no text streamed")}, ""
	}
	return r, text.String()
}

type chatResult struct {
	ttft         time.Duration
	promptTokens int
	cached       int
	err          error
}
