// Package testregistry is an OCI registry on loopback for tests: the
// in-memory registry of go-containerregistry's pkg/registry, served over
// TLS with a test CA it generates (or over plain HTTP), optionally behind
// basic auth, with helpers to push skiff's image archives and multi-arch
// indexes into it and a fault switch that makes blob requests fail, hang
// or break off mid-body (a registry going away during a pull).
//
// It is for tests and benchmarks only: the CA key lives in memory and the
// registry keeps every blob in memory.
package testregistry

import (
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Options configure Start.
type Options struct {
	// Dir receives ca.pem, the CA that signed the server's certificate (a
	// client trusts the registry with it). Required unless PlainHTTP.
	Dir string
	// PlainHTTP serves http:// instead of https:// (containerd pulls from a
	// loopback registry over http without any configuration).
	PlainHTTP bool
	// Username and Password, when Username is set, are the only
	// credentials accepted: any other request gets 401 with a
	// WWW-Authenticate Basic challenge.
	Username, Password string
}

// Registry is a running test registry. Its methods are safe for concurrent
// use. Close it when done (t.Cleanup).
type Registry struct {
	// Host is "127.0.0.1:port", as image references name the registry.
	Host string
	// CAFile is the path of ca.pem ("" with PlainHTTP).
	CAFile string

	opts   Options
	caPool *x509.CertPool // nil with PlainHTTP
	srv    *http.Server
	faults *faults
	served chan struct{} // closed when Serve returned

	mu       sync.Mutex
	requests []Request
}

// Request is one request the registry received (before authentication).
type Request struct {
	Time         time.Time
	Method, Path string
	// Status is the answer's status code (0 when the connection was
	// dropped before one was sent).
	Status int
}

// Start serves a new, empty registry on 127.0.0.1 at a free port. It
// returns once the registry accepts connections.
func Start(opts Options) (*Registry, error) {
	if !opts.PlainHTTP && opts.Dir == "" {
		return nil, errors.New("testregistry: Options.Dir is required for TLS (ca.pem goes there)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testregistry: listen: %w", err)
	}
	r := &Registry{Host: ln.Addr().String(), opts: opts, faults: newFaults(), served: make(chan struct{})}
	quiet := log.New(io.Discard, "", 0)
	h := r.faults.wrap(registry.New(registry.Logger(quiet)))
	if opts.Username != "" {
		h = basicAuth(h, opts.Username, opts.Password)
	}
	h = r.record(h)
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: quiet}
	if !opts.PlainHTTP {
		ca, err := newTestCA()
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		cert, err := ca.serverCert()
		if err != nil {
			_ = ln.Close()
			return nil, err
		}
		r.CAFile = filepath.Join(opts.Dir, "ca.pem")
		if err := os.WriteFile(r.CAFile, ca.pem, 0o644); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("testregistry: write ca.pem: %w", err)
		}
		r.caPool = x509.NewCertPool()
		r.caPool.AddCert(ca.cert)
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	go func() {
		defer close(r.served)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Close stops the registry: it releases hanging requests, closes the
// listener and every connection, and waits for the server to return.
// Idempotent.
func (r *Registry) Close() error {
	r.faults.close()
	err := r.srv.Close()
	<-r.served
	return err
}

// Scheme is "https", or "http" with PlainHTTP.
func (r *Registry) Scheme() string {
	if r.opts.PlainHTTP {
		return "http"
	}
	return "https"
}

// URL is the registry's endpoint URL ("https://127.0.0.1:port"), as a
// registries.yaml mirror endpoint names it.
func (r *Registry) URL() string { return r.Scheme() + "://" + r.Host }

// Ref returns the reference of repo (a "name:tag" or "name@sha256:...")
// in this registry: "127.0.0.1:port/name:tag".
func (r *Registry) Ref(repo string) string { return r.Host + "/" + strings.TrimPrefix(repo, "/") }

// Transport returns an HTTP transport that trusts the registry's CA (a
// plain transport with PlainHTTP). It uses no proxy.
func (r *Registry) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if r.caPool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: r.caPool, MinVersion: tls.VersionTLS12}
	}
	return tr
}

// Requests returns every request received so far, oldest first.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// record appends each request to r.requests when its handler returns (or
// panics to drop the connection).
func (r *Registry) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		entry := Request{Time: time.Now(), Method: req.Method, Path: req.URL.Path}
		defer func() {
			entry.Status = sw.status
			r.mu.Lock()
			r.requests = append(r.requests, entry)
			r.mu.Unlock()
		}()
		next.ServeHTTP(sw, req)
	})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush passes a flush on (CutBlobs flushes the part it sends).
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// basicAuth answers 401 with a Basic challenge unless the request carries
// user and password.
func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="testregistry"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}
