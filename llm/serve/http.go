package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Defaults of the HTTP limits in Config.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConns          = 512
	maxHeaderBytes           = 64 << 10
	maxKeyLen                = 4096
)

// limit turns a Config duration into an http.Server one: 0 takes def, a negative value is off.
func limit(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// httpServer is rank 0's http.Server with the configured limits. WriteTimeout bounds whole
// responses of the short routes; the generation routes arm it again before each write (see
// armWrite), so that a long generation is never cut while a client that stops reading is.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: limit(s.cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       limit(s.cfg.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      limit(s.cfg.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       limit(s.cfg.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
		TLSConfig:         s.cfg.TLS,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// serveHTTP serves srv on ln, capped at the configured connections, over TLS when configured.
func (s *Server) serveHTTP(srv *http.Server, ln net.Listener) error {
	if n := s.cfg.MaxConns; n >= 0 {
		if n == 0 {
			n = DefaultMaxConns
		}
		ln = newLimitListener(ln, n)
	}
	if s.cfg.TLS != nil {
		return srv.ServeTLS(ln, "", "") // the certificates are in srv.TLSConfig
	}
	return srv.Serve(ln)
}

// armWrite gives a generation route's next writes the write timeout from now. A deadline
// only bounds the writes made before it passes, so the time the model works between writes
// does not count against it.
func (s *Server) armWrite(rc *http.ResponseController) {
	if d := limit(s.cfg.WriteTimeout, DefaultWriteTimeout); d > 0 {
		rc.SetWriteDeadline(time.Now().Add(d)) // http.ErrNotSupported outside a server (tests' recorders): nothing to bound
	}
}

// limitListener holds at most cap(sem) connections open: Accept waits, leaving new ones in
// the kernel's backlog, until one closes.
type limitListener struct {
	net.Listener
	sem    chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// authorize requires the API key, when one is configured, on every path but the open ones
// (the chat page's files and /health, which tell nothing about the conversations and cost
// nothing to answer): /v1/*, /metrics and any unrouted path. A key is presented as
// "Authorization: Bearer KEY" (OpenAI's clients) or "x-api-key: KEY" (Anthropic's). Keys are
// compared as SHA-256 digests in constant time, so that neither the key's bytes nor its length
// show in the time of a refusal.
func (s *Server) authorize(next http.Handler, open map[string]bool) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := sha256.Sum256([]byte(s.cfg.APIKey))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		keys := presentedKeys(r)
		ok := 0
		for _, k := range keys {
			got := sha256.Sum256([]byte(k))
			ok |= subtle.ConstantTimeCompare(got[:], want[:])
		}
		if ok == 1 {
			next.ServeHTTP(w, r)
			return
		}
		msg := `no API key: send it as "Authorization: Bearer KEY" (or "x-api-key: KEY")`
		if len(keys) > 0 {
			msg = "incorrect API key provided"
		}
		s.metrics.requests.WithLabelValues("unauthorized", "401").Inc()
		if s.cfg.Log != nil {
			s.cfg.Log.Printf("%s %s 401 (%s) from %s", r.Method, r.URL.Path, msg, r.RemoteAddr)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="llm serve"`)
		writeError(w, &apiError{status: http.StatusUnauthorized, Message: msg, Type: "invalid_request_error", Code: "invalid_api_key"})
	})
}

// CheckAPIKey says whether key can be an API key: 1 to 4096 bytes of printable ASCII without
// spaces, what a client can send in a header unchanged.
func CheckAPIKey(key string) error {
	if key == "" {
		return errors.New("the API key is empty")
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("the API key is %d bytes long, over the limit of %d", len(key), maxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("the API key has a space, a control character or a non-ASCII byte (0x%02x at byte %d); use printable ASCII without spaces", c, i)
		}
	}
	return nil
}

// presentedKeys returns the keys a request carries: the token of a Bearer Authorization
// header (the scheme's case is free) and the x-api-key header.
func presentedKeys(r *http.Request) []string {
	var keys []string
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, token, found := strings.Cut(strings.TrimSpace(a), " ")
		if found && strings.EqualFold(scheme, "Bearer") {
			keys = append(keys, strings.TrimSpace(token))
		} else {
			keys = append(keys, "") // present but not Bearer: a wrong key, not a missing one
		}
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		keys = append(keys, strings.TrimSpace(k))
	}
	return keys
}

// TLSConfig returns a server TLS configuration with the certificate and key of two PEM files
// (TLS 1.2 at least).
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
