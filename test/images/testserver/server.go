package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// server holds the mutable state behind the endpoints.
type server struct {
	out io.Writer
	// mu guards ready and toggled.
	mu    sync.Mutex
	ready bool
	// toggled is set once POST /ready was called; it cancels --ready-after.
	toggled bool
	health  *health.Server
	// exit ends the process; tests replace it.
	exit func(code int)
}

func newServer(out io.Writer, exit func(int)) *server {
	s := &server{out: out, health: health.NewServer(), exit: exit}
	s.ready = true
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	return s
}

// setReadyAfter makes the server unready for d, then ready (unless /ready
// was toggled meanwhile, which wins).
func (s *server) setReadyAfter(d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	s.ready = false
	s.mu.Unlock()
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.toggled {
			s.ready = true
		}
	})
}

// handler returns the HTTP routes.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /ready", s.getReady)
	mux.HandleFunc("POST /ready", s.setReady)
	mux.HandleFunc("GET /status/{code}", statusCode)
	mux.HandleFunc("GET /redirect", redirect)
	mux.HandleFunc("GET /headers", headers)
	mux.HandleFunc("/exit", s.exitHandler)
	mux.HandleFunc("POST /grpc-health", s.setGRPCHealth)
	return mux
}

func (s *server) getReady(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if !ready {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *server) setReady(w http.ResponseWriter, r *http.Request) {
	state, err := strconv.ParseBool(r.URL.Query().Get("state"))
	if err != nil {
		http.Error(w, "state must be true or false", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.toggled, s.ready = true, state
	s.mu.Unlock()
	fmt.Fprintf(s.out, "testserver: readiness set to %t\n", state)
	fmt.Fprintf(w, "ready=%t\n", state)
}

func statusCode(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 100 || code > 999 {
		http.Error(w, "bad status code", http.StatusBadRequest)
		return
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, "status %d\n", code)
}

func redirect(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to == "" {
		http.Error(w, "missing ?to=", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func headers(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Clone()
	if r.Host != "" {
		h.Set("Host", r.Host)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(h)
}

// exitHandler answers, flushes the answer to the client, then exits.
func (s *server) exitHandler(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.URL.Query().Get("code"))
	if err != nil || code < 0 || code > 255 {
		http.Error(w, "code must be 0..255", http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "exiting with code %d\n", code)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.exit(code)
}

func (s *server) setGRPCHealth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, ok := healthpb.HealthCheckResponse_ServingStatus_value[q.Get("status")]
	if !ok {
		http.Error(w, "status must be SERVING or NOT_SERVING", http.StatusBadRequest)
		return
	}
	status := healthpb.HealthCheckResponse_ServingStatus(v)
	s.health.SetServingStatus(q.Get("service"), status)
	fmt.Fprintf(s.out, "testserver: grpc health %q set to %s\n", q.Get("service"), status)
	fmt.Fprintf(w, "grpc health=%s\n", status)
}

// listen opens the requested ports (0 skips one) and serves them in the
// background for the life of the process.
func (s *server) listen(httpPort, tcpPort, grpcPort int) error {
	if httpPort > 0 {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", httpPort))
		if err != nil {
			return fmt.Errorf("http port: %w", err)
		}
		hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(l) }()
	}
	if tcpPort > 0 {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", tcpPort))
		if err != nil {
			return fmt.Errorf("tcp port: %w", err)
		}
		go acceptAndClose(l)
	}
	if grpcPort > 0 {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", grpcPort))
		if err != nil {
			return fmt.Errorf("grpc port: %w", err)
		}
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, s.health)
		go func() { _ = gs.Serve(l) }()
	}
	return nil
}

// acceptAndClose accepts connections on l and closes each at once.
func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}
