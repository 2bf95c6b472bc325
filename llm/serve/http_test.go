package serve

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testKey = "sk-test-0123456789abcdef"

// withKey adds the API key to every request.
type withKey struct {
	http.RoundTripper
	key string
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.RoundTripper.RoundTrip(r)
}

// do sends a request with headers and returns the status, headers and body.
func (ts *testServer) do(t *testing.T, method, path string, header map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// With an API key, /v1/*, /metrics and unrouted paths answer 401 with OpenAI's error object
// unless the request carries the key (Bearer or x-api-key); /health and the chat page stay
// open.
func TestAPIKey(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{APIKey: testKey, Metrics: true}})
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	chat := `{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":8,"temperature":0}`
	for _, c := range []struct {
		name         string
		method, path string
		header       map[string]string
		want         string // message of the 401
	}{
		{"models, no key", "GET", "/v1/models", nil, "no API key"},
		{"models, wrong key", "GET", "/v1/models", bearer("sk-wrong"), "incorrect API key"},
		{"models, the key's prefix", "GET", "/v1/models", bearer(testKey[:len(testKey)-1]), "incorrect API key"},
		{"models, the key and more", "GET", "/v1/models", bearer(testKey + "x"), "incorrect API key"},
		{"models, empty bearer", "GET", "/v1/models", map[string]string{"Authorization": "Bearer "}, "incorrect API key"},
		{"models, the key as Basic", "GET", "/v1/models", map[string]string{"Authorization": "Basic " + testKey}, "incorrect API key"},
		{"models, wrong x-api-key", "GET", "/v1/models", map[string]string{"X-Api-Key": "sk-wrong"}, "incorrect API key"},
		{"model, no key", "GET", "/v1/models/stories", nil, "no API key"},
		{"chat, no key", "POST", "/v1/chat/completions", nil, "no API key"},
		{"chat, wrong key", "POST", "/v1/chat/completions", bearer("sk-wrong"), "incorrect API key"},
		{"completions, wrong key", "POST", "/v1/completions", bearer("sk-wrong"), "incorrect API key"},
		{"metrics, no key", "GET", "/metrics", nil, "no API key"},
		{"unrouted path, no key", "GET", "/v1/nothing", nil, "no API key"},
		{"path with dot segments, no key", "GET", "/health/../v1/models", nil, "no API key"},
	} {
		code, h, body := ts.do(t, c.method, c.path, c.header, chat)
		if code != http.StatusUnauthorized {
			t.Errorf("%s: status %d: %s", c.name, code, body)
			continue
		}
		e := errorOf(t, body)
		if e.Error.Type != "invalid_request_error" || e.Error.Code != "invalid_api_key" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %s, want a message with %q", c.name, body, c.want)
		}
		if strings.Contains(string(body), "sk-wrong") {
			t.Errorf("%s: the refusal repeats the key sent: %s", c.name, body)
		}
		if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, h.Get("WWW-Authenticate"))
		}
	}
	if a, w := ts.srv.Load(); a != 0 || w != 0 {
		t.Errorf("refused requests reached the engine: %d active, %d waiting", a, w)
	}
	for _, header := range []map[string]string{bearer(testKey), {"Authorization": "bearer " + testKey}, {"X-Api-Key": testKey},
		{"Authorization": "Bearer sk-wrong", "X-Api-Key": testKey}} {
		code, _, body := ts.do(t, "GET", "/v1/models", header, "")
		if code != 200 || !strings.Contains(string(body), `"id":"stories"`) {
			t.Errorf("models with %v: %d %s", header, code, body)
		}
		code, _, body = ts.do(t, "POST", "/v1/chat/completions", header, chat)
		var c completion
		if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Message.Content == "" {
			t.Errorf("chat with %v: %d %s", header, code, body)
		}
	}
	code, _, body := ts.do(t, "POST", "/v1/completions", bearer(testKey), `{"prompt":"Once upon a time","max_tokens":32,"temperature":0}`)
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Text != onceUponATime {
		t.Errorf("completion with the key: %d %s", code, body)
	}
	if code, _, body := ts.do(t, "GET", "/v1/nothing", bearer(testKey), ""); code != http.StatusNotFound {
		t.Errorf("unrouted path with the key: %d %s", code, body)
	}
	for _, path := range []string{"/health", "/", "/chat.js", "/style.css"} {
		if code, _, body := ts.do(t, "GET", path, nil, ""); code != 200 {
			t.Errorf("%s without a key: %d %s", path, code, body)
		}
	}
	code, _, body = ts.do(t, "GET", "/metrics", bearer(testKey), "")
	if code != 200 || !strings.Contains(string(body), `gorun_llm_requests_total{code="401",endpoint="unauthorized"} 14`) {
		t.Errorf("metrics with the key: %d\n%s", code, body)
	}
}

func TestCheckAPIKey(t *testing.T) {
	for _, k := range []string{testKey, "x", strings.Repeat("k", 4096), "!~"} {
		if err := CheckAPIKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for k, want := range map[string]string{"": "empty", "a key": "0x20 at byte 1", "key\n": "0x0a at byte 3", "clé": "0xc3 at byte 2",
		strings.Repeat("k", 4097): "over the limit of 4096"} {
		if err := CheckAPIKey(k); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", k, err, want)
		}
	}
}

// rawConn dials the test server and returns the connection and a reader on it; the test ends
// with an error rather than hanging when the server neither answers nor closes.
func rawConn(t *testing.T, ts *testServer) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// closedByServer reads until the server closes the connection; it fails on data or on the
// 30 s guard of rawConn.
func closedByServer(t *testing.T, what string, r *bufio.Reader) {
	t.Helper()
	b, err := r.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		rest, _ := r.Peek(r.Buffered())
		t.Errorf("%s: the server sent %q instead of closing", what, append([]byte{b}, rest...))
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: the connection is still open after 30 s", what)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset"):
	default:
		t.Errorf("%s: %v", what, err)
	}
}

// A body that trickles in is cut off at the read timeout with 408; headers that trickle in
// are cut off at the header timeout; a keep-alive connection left idle is closed at the idle
// timeout.
func TestTimeouts(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond}})

	c, r := rawConn(t, ts)
	if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// One byte every 50 ms: the 200-byte body would take 10 s.
	stop := make(chan struct{})
	defer close(stop)
	go func(c net.Conn) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("slow body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || errorOf(t, body).Error.Code != "request_timeout" || !strings.Contains(string(body), "read timeout (500ms)") {
		t.Errorf("slow body: %d %s", resp.StatusCode, body)
	}
	closedByServer(t, "slow body", r)

	c, r = rawConn(t, ts)
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, "headers never ended", r)

	// The idle timeout alone (the read timeout, which stands in for it when it is 0, is left
	// at its default of a minute, beyond the 30 s guard).
	ts = startServer(t, serverOpts{cfg: Config{IdleTimeout: 300 * time.Millisecond}})
	c, r = rawConn(t, ts)
	for i := 0; i < 2; i++ { // the connection is kept alive between requests
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("keep-alive request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("keep-alive request %d: %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
	closedByServer(t, "idle keep-alive", r)
}

// A write timeout far shorter than a generation cuts neither a whole response nor a stream:
// it bounds each write, not the time the model works.
func TestWriteTimeoutSparesLongGenerations(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{WriteTimeout: 100 * time.Millisecond}, setup: func(rank int, s *Server) {
		s.eng.beforeStep = func() { time.Sleep(20 * time.Millisecond) } // 32 tokens: over 0.6 s
	}})
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0}
	code, _, body := ts.post(t, "/v1/completions", req)
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Text != onceUponATime {
		t.Errorf("whole: %d %s", code, body)
	}
	s := ts.stream(t, "/v1/completions", req)
	if s.text != onceUponATime || !s.done {
		t.Errorf("streamed: %q, done %v", s.text, s.done)
	}
}

// At most MaxConns connections are served at once: one more waits until one closes.
func TestMaxConns(t *testing.T) {
	ts := startServer(t, serverOpts{cfg: Config{MaxConns: 2}})
	held := make([]net.Conn, 2)
	for i := range held {
		held[i], _ = rawConn(t, ts)
	}
	// The two held connections are accepted (the server has read nothing from them); prove the
	// server took them by a request on the first.
	io.WriteString(held[0], "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(held[0]), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("held connection: %v", err)
	}
	resp.Body.Close()
	got := make(chan int, 1)
	go func() {
		resp, err := ts.client.Get(ts.url + "/health")
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	select {
	case code := <-got:
		t.Fatalf("a third connection was served (%d) while two were held", code)
	case <-time.After(300 * time.Millisecond):
	}
	held[1].Close()
	select {
	case code := <-got:
		if code != 200 {
			t.Errorf("third connection: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the third connection was not served after one closed")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files in dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "llm serve test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// Over TLS with a key: a client trusting the certificate gets the reference completion, one
// that does not trust it fails the handshake, plain HTTP is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	cfg, err := TLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, serverOpts{ranks: 2, cfg: Config{TLS: cfg, APIKey: testKey}})
	if !strings.HasPrefix(ts.url, "https://") {
		t.Fatalf("url %s", ts.url)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	ts.client = &http.Client{Timeout: 60 * time.Second, Transport: withKey{tr, testKey}}
	code, _, body := ts.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0})
	var c completion
	if code != 200 || json.Unmarshal(body, &c) != nil || c.Choices[0].Text != onceUponATime {
		t.Errorf("completion over TLS: %d %s", code, body)
	}
	s := ts.stream(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 32, "temperature": 0})
	if s.text != onceUponATime || !s.done {
		t.Errorf("streamed over TLS: %q, done %v", s.text, s.done)
	}
	resp, err := ts.client.Get(ts.url + "/v1/models")
	if err != nil || resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("models over TLS: %v %v", resp, err)
	}
	resp.Body.Close()
	t.Logf("%s, TLS version %x", resp.Proto, resp.TLS.Version)
	ts.client.Transport = tr
	if code, _ := ts.get(t, "/v1/models"); code != http.StatusUnauthorized {
		t.Errorf("no key over TLS: %d", code)
	}

	untrusting := &http.Client{Timeout: 30 * time.Second}
	if _, err := untrusting.Get(ts.url + "/health"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the certificate: %v", err)
	}
	plain := defaultTestClient()
	resp, err = plain.Get("http://" + strings.TrimPrefix(ts.url, "https://") + "/health")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}

	if _, err := TLSConfig(filepath.Join(dir, "none.pem"), keyFile); err == nil || !strings.Contains(err.Error(), "none.pem") {
		t.Errorf("missing certificate file: %v", err)
	}
	if _, err := TLSConfig(keyFile, certFile); err == nil {
		t.Errorf("certificate and key swapped: no error")
	}
}
