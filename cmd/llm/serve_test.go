package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// llm serve on the real tiny model, loaded by llm bench-serve at two concurrencies.
func TestServeAndBenchServe(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- serveUntil(ctx, []string{"-m", path, "--port", "0", "--parallel", "4"}, &serveErr, func(a string) { addr <- a })
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v %s", err, serveErr.String())
	}
	// Greedy output equals `llm generate`'s.
	var gen, generr bytes.Buffer
	if rc := run([]string{"generate", "-m", path, "-p", "Once upon a time", "-n", "40", "--quiet"}, &gen, &generr); rc != 0 {
		t.Fatalf("generate: %s", generr.String())
	}
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Once upon a time","max_tokens":40,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct{ Text string }
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || len(c.Choices) != 1 || "Once upon a time"+c.Choices[0].Text+"\n" != gen.String() {
		t.Errorf("serve: %+v %v; llm generate: %q", c, err, gen.String())
	}

	var out, errb bytes.Buffer
	if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "1,4", "-n", "8", "-o", "json"}, &out, &errb); rc != 0 {
		t.Fatalf("bench-serve rc %d: %s", rc, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("bench-serve printed %q", out.String())
	}
	for i, line := range lines {
		var lv serveLevel
		if err := json.Unmarshal([]byte(line), &lv); err != nil {
			t.Fatal(err)
		}
		want := []int{1, 4}[i]
		if lv.Concurrency != want || lv.Errors != 0 || lv.Requests != 4*i+4 || lv.GenTokens != 8*lv.Requests || lv.Throughput <= 0 || lv.TTFTP50Ms <= 0 || lv.Model != "stories260K" {
			t.Errorf("level %d: %+v", i, lv)
		}
	}
	// --multi-turn: the second turn repeats the first's history, which the server finds in
	// its prompt cache (the server's context of 128 tokens holds a history of 20 words).
	out.Reset()
	if rc := run([]string{"bench-serve", "--url", url, "--multi-turn", "20", "--requests", "2", "-n", "4", "-o", "json"}, &out, &errb); rc != 0 {
		t.Fatalf("bench-serve --multi-turn rc %d: %s", rc, errb.String())
	}
	var mt multiTurn
	if err := json.Unmarshal(out.Bytes(), &mt); err != nil || mt.Chats != 2 || mt.Turn2Prompt <= mt.Turn1Prompt ||
		mt.Turn2Cached < mt.Turn1Prompt/2 || mt.Turn2Cached >= mt.Turn2Prompt || mt.TTFT1Ms <= 0 || mt.TTFT2Ms <= 0 {
		t.Errorf("bench-serve --multi-turn: %+v (%v) from %s", mt, err, out.String())
	}
	if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "0"}, &out, &errb); rc != 1 {
		t.Errorf("concurrency 0: rc %d", rc)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(serveErr.String(), "stories260K (llama, 1 rank(s)") {
		t.Errorf("serve's banner: %q", serveErr.String())
	}
}

// startServe runs serveUntil with args in the background; it returns rank 0's address and a
// function that stops the server and returns its error and stderr.
func startServe(t *testing.T, args ...string) (addr string, stop func() (error, string)) {
	t.Helper()
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- serveUntil(ctx, append([]string{"-m", path, "--port", "0"}, args...), &stderr, func(a string) { addrc <- a })
	}()
	select {
	case addr = <-addrc:
	case err := <-done:
		cancel()
		t.Fatalf("serve %v: %v\n%s", args, err, stderr.String())
	}
	var once sync.Once
	var err error
	stop = func() (error, string) {
		once.Do(func() { cancel(); err = <-done })
		return err, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

// get sends GET url with an optional Bearer key and returns the status and body.
func get(t *testing.T, client *http.Client, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// llm serve --api-key K: no key or a wrong one gets 401 with OpenAI's error object, K gets
// 200; so with --api-key-file and GORUN_API_KEY. Bound to every interface without a key, the
// server warns on stderr; with one, it only notes the missing TLS.
func TestServeAPIKey(t *testing.T) {
	const key = "sk-cmd-test-key-42"
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute}
	for _, c := range []struct {
		name string
		args []string
		env  string
	}{
		{"--api-key", []string{"--api-key", key}, ""},
		{"--api-key-file", []string{"--api-key-file", file, "--host", "0.0.0.0"}, ""},
		{envAPIKey, nil, key},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envAPIKey, c.env)
			addr, stop := startServe(t, c.args...)
			_, port, _ := net.SplitHostPort(addr)
			url := "http://127.0.0.1:" + port
			for _, k := range []string{"", "sk-wrong", key + "x"} {
				code, body := get(t, client, url+"/v1/models", k)
				if code != http.StatusUnauthorized || !strings.Contains(body, `"code":"invalid_api_key"`) || !strings.Contains(body, `"type":"invalid_request_error"`) {
					t.Errorf("key %q: %d %s", k, code, body)
				}
			}
			if code, body := get(t, client, url+"/v1/models", key); code != 200 || !strings.Contains(body, `"id":"stories260K"`) {
				t.Errorf("the key: %d %s", code, body)
			}
			if code, _ := get(t, client, url+"/health", ""); code != 200 {
				t.Errorf("/health without a key: %d", code)
			}
			if c.env != "" { // bench-serve sends $GORUN_API_KEY
				var out, errb bytes.Buffer
				if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "1", "--requests", "2", "-n", "4", "-o", "json"}, &out, &errb); rc != 0 {
					t.Errorf("bench-serve with %s: rc %d %s", envAPIKey, rc, errb.String())
				}
				t.Setenv(envAPIKey, "")
				if rc := run([]string{"bench-serve", "--url", url, "--concurrency", "1", "-n", "4"}, &out, &errb); rc == 0 || !strings.Contains(errb.String(), "401") {
					t.Errorf("bench-serve without the key: rc %d %s", rc, errb.String())
				}
			}
			err, stderr := stop()
			if err != nil {
				t.Errorf("serve: %v", err)
			}
			if strings.Contains(stderr, "WARNING") || !strings.Contains(stderr, "require the API key from "+strings.Fields(c.name)[0]) {
				t.Errorf("stderr: %s", stderr)
			}
			if wide := len(c.args) > 2; wide != strings.Contains(stderr, "note: listening on every interface (") && strings.Contains(stderr, ":"+port+") without TLS") {
				t.Errorf("note on TLS (every interface: %v): %s", wide, stderr)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		t.Setenv(envAPIKey, "")
		addr, stop := startServe(t, "--host", "0.0.0.0")
		_, port, _ := net.SplitHostPort(addr)
		if code, _ := get(t, client, "http://127.0.0.1:"+port+"/v1/models", ""); code != 200 {
			t.Errorf("no key configured: %d", code)
		}
		_, stderr := stop()
		if !strings.Contains(stderr, "llm serve: WARNING: listening on every interface (") || !strings.Contains(stderr, ":"+port+") without an API key:") ||
			!strings.Contains(stderr, "anyone who can reach this port can run the model") {
			t.Errorf("no warning: %s", stderr)
		}
	})
}

func TestExposureWarnings(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, c := range []struct {
		addr             net.Addr
		keyed, encrypted bool
		want             string // "" for no lines
	}{
		{tcp("127.0.0.1"), false, false, ""},
		{tcp("::1"), false, false, ""},
		{tcp("0.0.0.0"), false, false, "WARNING: listening on every interface (0.0.0.0:8080) without an API key"},
		{tcp("::"), false, true, "WARNING: listening on every interface ([::]:8080) without an API key"},
		{tcp("10.1.2.3"), false, false, "WARNING: listening on 10.1.2.3:8080, beyond loopback, without an API key"},
		{tcp("10.1.2.3"), true, false, "note: listening on 10.1.2.3:8080, beyond loopback, without TLS"},
		{tcp("10.1.2.3"), true, true, ""},
	} {
		lines := strings.Join(exposureWarnings(c.addr, c.keyed, c.encrypted), "\n")
		if (c.want == "") != (lines == "") || !strings.Contains(lines, c.want) {
			t.Errorf("%v keyed %v TLS %v: %q, want %q", c.addr, c.keyed, c.encrypted, lines, c.want)
		}
	}
}

// Where the key comes from, and every way a key or key file is refused.
func TestAPIKeySources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	good := write("good", "sk-file\r\n\n", 0o600)
	for _, c := range []struct {
		flag, file, env, want, from string
	}{
		{"sk-flag", "", "sk-env", "sk-flag", "--api-key"},
		{"", good, "sk-env", "sk-file", "--api-key-file " + good},
		{"", "", "sk-env", "sk-env", envAPIKey},
		{"", "", "", "", ""},
	} {
		key, from, err := apiKey(c.flag, c.file, env(c.env))
		if err != nil || key != c.want || from != c.from {
			t.Errorf("%+v: %q from %q, %v", c, key, from, err)
		}
	}
	for _, c := range []struct {
		flag, file, env, want string
	}{
		{"", write("open", "sk-x\n", 0o644), "", "has mode 0644: group or others may read or change the key; chmod 600"},
		{"", write("group", "sk-x\n", 0o640), "", "has mode 0640"},
		{"", write("groupwrite", "sk-x\n", 0o620), "", "has mode 0620"},
		{"", filepath.Join(dir, "absent"), "", "absent: no such file"},
		{"", dir, "", "not a regular file"},
		{"", write("empty", "\n", 0o600), "", "is empty"},
		{"", write("big", strings.Repeat("k", 5000), 0o600), "", "over 4096 bytes"},
		{"", write("spaced", "sk x\n", 0o600), "", "--api-key-file " + filepath.Join(dir, "spaced") + ": the API key has a space"},
		{"sk\tx", "", "", "--api-key: the API key has a space, a control character"},
		{"", "", "sk é", envAPIKey + ": the API key has a space"},
	} {
		if _, _, err := apiKey(c.flag, c.file, env(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c, err, c.want)
		}
	}
}

// Flags that cannot work are refused with a message naming them, before or after the model
// loads, and the command returns (no rank is left waiting).
func TestServeFlagErrors(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("sk-x\n"), 0o644)
	os.Chmod(open, 0o644)
	junk := filepath.Join(dir, "junk.pem")
	os.WriteFile(junk, []byte("not PEM"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--api-key", "a", "--api-key-file", open}, "--api-key and --api-key-file: give one"},
		{[]string{"--tls-cert", junk}, "--tls-cert and --tls-key go together"},
		{[]string{"--read-timeout", "-1s"}, "--read-timeout -1s: want >= 0"},
		{[]string{"--max-conns", "-2"}, "--max-conns -2"},
		{[]string{"--api-key-file", open}, "--api-key-file: " + open + " has mode 0644"},
		{[]string{"--tls-cert", junk, "--tls-key", junk}, "--tls-cert " + junk + ", --tls-key " + junk + ": tls: failed to find any PEM data"},
		{[]string{"--cpuprofile", filepath.Join(dir, "none", "p.prof")}, "--cpuprofile: open " + filepath.Join(dir, "none", "p.prof")},
	} {
		done := make(chan error, 1)
		var stderr bytes.Buffer
		go func() {
			done <- serveUntil(context.Background(), append([]string{"-m", path, "--port", "0"}, c.args...), &stderr, nil)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%v: serve did not return", c.args)
		}
	}
}

// --cpuprofile FILE: a request served, the server stopped, FILE holds a gzipped profile.
func TestServeCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "serve.prof")
	addr, stop := startServe(t, "--cpuprofile", prof)
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Once upon a time","max_tokens":8,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %s", resp.Status)
	}
	if err, stderr := stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("%s: %d bytes, not a gzipped profile", prof, len(b))
	}
}

// --tls-cert and --tls-key: the banner says https, and a client trusting the certificate gets
// the model list.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(priv)
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)

	t.Setenv(envAPIKey, "")
	addr, stop := startServe(t, "--tls-cert", certFile, "--tls-key", keyFile)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := get(t, client, "https://"+addr+"/v1/models", ""); code != 200 || !strings.Contains(body, "stories260K") {
		t.Errorf("models over TLS: %d %s", code, body)
	}
	if err, stderr := stop(); err != nil || !strings.Contains(stderr, " on https://"+addr) {
		t.Errorf("serve: %v %s", err, stderr)
	}
}

// llm serve with one slot, a Q8_0 key cache and a small --cache-ram: a chat's second turn,
// after an unrelated request took the only slot, still finds its history in the KV blocks kept
// across slots (bench-serve --multi-turn --interleave).
func TestServePrefixBlocksOneSlot(t *testing.T) {
	path := testfiles.Path(t, "llm", "stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- serveUntil(ctx, []string{"-m", path, "--port", "0", "--parallel", "1", "-c", "256", "--cache-type-k", "q8_0", "--cache-ram", "1"}, &serveErr, func(a string) { addr <- a })
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v %s", err, serveErr.String())
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"bench-serve", "--url", url, "--multi-turn", "60", "--interleave", "--requests", "2", "-n", "4", "-o", "json"}, &out, &errb); rc != 0 {
		t.Fatalf("bench-serve --multi-turn --interleave rc %d: %s", rc, errb.String())
	}
	var mt multiTurn
	if err := json.Unmarshal(out.Bytes(), &mt); err != nil || !mt.Interleaved || mt.Turn2Cached < mt.Turn1Prompt/32*32 || mt.Turn2Cached >= mt.Turn2Prompt {
		t.Errorf("bench-serve --multi-turn --interleave: %+v (%v) from %s", mt, err, out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(serveErr.String(), "KV cache q8_0/f16") {
		t.Errorf("serve's banner: %q", serveErr.String())
	}
	for _, bad := range [][]string{{"--cache-ram", "-2"}, {"--cache-type-k", "q5_1"}, {"--cache-type-v", "bf16"}} {
		var e bytes.Buffer
		err := serveUntil(context.Background(), append([]string{"-m", path, "--port", "0"}, bad...), &e, nil)
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")[:5]) && !strings.Contains(err.Error(), bad[1]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
