// Package server is skiff's local HTTP API, compatible with the kubelet's
// read-only endpoints, and the client the CLI uses to call it:
//
//	GET /pods                                     v1.PodList of the pods on this node
//	GET /healthz                                  "ok", or 500 with the error
//	GET /containerLogs/{namespace}/{pod}/{container}?follow=&previous=&tailLines=&timestamps=
//	GET /events?fieldSelector=                    v1.EventList of the node's recent pod events
//	POST /run/{namespace}/{pod}/{container}?cmd=&cmd=&timeout=   ExecResult of a one-shot command
//	GET /stats/summary                            pod and container cpu/memory (kubelet summary API shape)
//	GET /images                                   []Image: the runtime's images, their use and pinning
//	POST /images/pull?image=REF                   pull through the agent: a stream of PullEvent lines
//	DELETE /images?image=REF                      remove an image (all its tags)
//	GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}?command=&input=1&output=1&error=1&tty=1
//	GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}?input=1&output=1&error=1
//	GET|POST /portForward/{namespace}/{pod}[/{uid}]  the kubelet's streaming endpoints (SPDY or
//	                                              WebSocket upgrades, proxied to the runtime's streaming server)
//	GET /metrics                                  Prometheus metrics (Config.Metrics; the kubelet's kubelet_* names)
//	GET /metrics/resource                         node, pod and container cpu/memory (Prometheus; metrics-server reads it)
//
// It is served on a unix socket (the CLI's default), optionally on TCP
// (--read-only-port), and as the kubelet's authenticated HTTPS API
// (--port, ServeTLS; see Auth). There is no authentication: the socket is created
// 0600 and the TCP port is meant for loopback or trusted networks, as the
// kubelet's read-only port. Note that /run executes commands in containers:
// expose the TCP port only where that is acceptable, or leave Config.Exec nil.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// PodProvider gives the server the pods it reports.
type PodProvider interface {
	// Pods returns the pods this node runs, with their current status.
	// Safe for concurrent use. The pods are snapshots: neither the
	// provider nor the caller mutates them after the call.
	Pods() []*v1.Pod
}

// Config holds what a Server needs.
type Config struct {
	// Pods provides the pods for /pods and /containerLogs. Required.
	Pods PodProvider
	// PodLogsDir is the root of the pod log directories
	// (podlogs.DefaultRoot when empty).
	PodLogsDir string
	// Logger receives request errors (discarded when nil).
	Logger *slog.Logger
	// Healthz reports the agent's health for a request (its context); nil
	// means always healthy.
	Healthz func(context.Context) error
	// LogPollInterval is how often a followed log is checked for new
	// output (podlogs.DefaultPollInterval when 0).
	LogPollInterval time.Duration
	// Events provides the events for /events; nil serves an empty list.
	Events EventProvider
	// Exec runs the commands of /run; nil answers 501.
	Exec Execer
	// Stats provides /stats/summary; nil answers 501.
	Stats StatsProvider
	// Images serves /images (list, pull, remove); nil answers 501. For
	// the root-only unix socket: pulls and removals change the node.
	Images Images
	// PullProgressInterval is how often /images/pull reports progress
	// (DefaultPullProgressInterval when 0).
	PullProgressInterval time.Duration
	// Clock times pull progress (the real clock when nil).
	Clock clock.WithTicker
	// Streamer serves /exec, /attach and /portForward (with Sandboxes);
	// nil answers 501. They run commands in containers: like Exec, for
	// the unix socket and the authenticated HTTPS port only.
	Streamer runtime.Streamer
	// Sandboxes finds the pods' sandboxes for /portForward.
	Sandboxes SandboxFinder
	// Profiling serves Go's profiles under /debug/pprof/ (as the kubelet's
	// enableProfilingHandler does); for the root-only unix socket.
	Profiling bool
	// Metrics serves GET /metrics (e.g. metrics.Handler); it must be safe
	// for concurrent use. nil: an empty exposition.
	Metrics http.Handler
}

// Server serves the local API. Its methods are safe for concurrent use; the
// handler does not modify the pods it gets from the PodProvider.
type Server struct {
	pods         PodProvider
	podLogsDir   string
	log          *slog.Logger
	healthz      func(context.Context) error
	pollInterval time.Duration
	events       EventProvider
	exec         Execer
	stats        StatsProvider
	profiling    bool
	images       Images
	pullInterval time.Duration
	clock        clock.WithTicker
	streamer     runtime.Streamer
	sandboxes    SandboxFinder
	metrics      http.Handler
	// streamTransport reaches the runtime's streaming server.
	streamTransport http.RoundTripper
}

// New returns a Server for cfg. It does not start serving.
func New(cfg Config) *Server {
	s := &Server{
		pods:         cfg.Pods,
		podLogsDir:   cfg.PodLogsDir,
		log:          cfg.Logger,
		healthz:      cfg.Healthz,
		pollInterval: cfg.LogPollInterval,
		events:       cfg.Events,
		exec:         cfg.Exec,
		stats:        cfg.Stats,
		profiling:    cfg.Profiling,
		images:       cfg.Images,
		pullInterval: cfg.PullProgressInterval,
		clock:        cfg.Clock,
		streamer:     cfg.Streamer,
		sandboxes:    cfg.Sandboxes,
		metrics:      cfg.Metrics,
	}
	if s.streamer != nil {
		s.streamTransport = newStreamTransport()
	}
	if s.pullInterval <= 0 {
		s.pullInterval = DefaultPullProgressInterval
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.pods == nil {
		s.pods = noPods{}
	}
	if s.events == nil {
		s.events = noEvents{}
	}
	if s.podLogsDir == "" {
		s.podLogsDir = podlogs.DefaultRoot
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = http.HandlerFunc(emptyMetrics)
	}
	return s
}

// Handler returns the API's HTTP handler. Unknown paths get 404 and other
// methods than the route's (GET, which allows HEAD, POST for /run and
// /images/pull, DELETE for /images, GET or POST for the streaming
// endpoints) get 405, from http.ServeMux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", s.handlePods)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.handleContainerLogs)
	mux.HandleFunc("GET /events", s.handleEvents)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.handleRun)
	mux.HandleFunc("GET /stats/summary", s.handleStats)
	mux.HandleFunc("GET /images", s.handleImages)
	mux.HandleFunc("POST /images/pull", s.handlePullImage)
	mux.HandleFunc("DELETE /images", s.handleRemoveImage)
	mux.Handle("GET /metrics", s.metrics)
	mux.HandleFunc("GET /metrics/resource", s.handleResourceMetrics)
	for _, method := range []string{"GET", "POST"} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.handleExec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.handleExec)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", s.handleAttach)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{uid}/{container}", s.handleAttach)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.handlePortForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.handlePortForward)
	}
	if s.profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

type noPods struct{}

func (noPods) Pods() []*v1.Pod { return nil }
