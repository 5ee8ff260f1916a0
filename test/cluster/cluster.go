package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config says where and with which binaries a control plane runs.
type Config struct {
	// Dir holds the certificates, kubeconfigs, etcd's data and the
	// components' logs; it is created if missing. Required.
	Dir string
	// Bin is the kube-controlplane multi-call binary (make controlplane).
	// Required.
	Bin string
	// Etcd is the etcd binary; "etcd" (looked up in PATH) when empty.
	Etcd string
	// NodeNames are the nodes that get a client certificate
	// (system:node:<name> in system:nodes) and a kubeconfig. Each must be
	// a DNS subdomain, and not "admin".
	NodeNames []string
	// Logf receives progress lines (t.Logf); nil discards them.
	Logf func(format string, args ...any)
	// AdvertiseAddress, when set, is an IPv4 address of this host that
	// the API server listens on too (it binds every address) and
	// advertises as the kubernetes service's endpoint, so that pods reach
	// it through kube-proxy (the full conformance suite). Empty: the API
	// server is on 127.0.0.1 only and the kubernetes service has no
	// endpoints.
	AdvertiseAddress string
}

// Timeouts of Start, RestartAPIServer and Stop. Start and RestartAPIServer
// also end when their context does.
const (
	startTimeout = 3 * time.Minute
	stopGrace    = 15 * time.Second
)

// Cluster is a running control plane: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, children of the test process.
// Its methods are safe for concurrent use.
type Cluster struct {
	cfg    Config
	port   int // the API server's secure port on 127.0.0.1
	admin  *rest.Config
	http   *http.Client // admin's, shared by client
	client kubernetes.Interface

	mu sync.Mutex // serializes RestartAPIServer and Stop
	// procs in start order: etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler.
	etcd, apiserver *process
	procs           []*process
	stopped         bool
}

// Start makes the PKI and kubeconfigs in cfg.Dir, starts etcd, the API
// server, the controller manager and the scheduler, and returns once the
// API server is ready (/readyz) and the default namespace and its default
// service account exist (the latter made by the controller manager), so
// pods can be created. On an error everything it started is stopped; the
// logs stay in cfg.Dir.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	began := time.Now()
	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{cfg: cfg, port: ports[0]}
	if err := c.writePKI(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.admin, err = c.RESTConfig("admin"); err != nil {
		return nil, err
	}
	if c.http, err = rest.HTTPClientFor(c.admin); err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	if c.client, err = kubernetes.NewForConfigAndClient(c.admin, c.http); err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.etcd = etcdProcess(cfg.Dir, cfg.Etcd, ports[1], ports[2])
	c.apiserver = apiserverProcess(cfg.Dir, cfg.Bin, c.port, etcdURL, cfg.AdvertiseAddress)
	c.procs = []*process{c.etcd, c.apiserver,
		controllerManagerProcess(cfg.Dir, cfg.Bin), schedulerProcess(cfg.Dir, cfg.Bin)}
	if err := c.start(ctx, etcdURL); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.logf("cluster: control plane ready at %s after %v (logs in %s)",
		c.Server(), time.Since(began).Round(time.Millisecond), cfg.Dir)
	return c, nil
}

// validate checks cfg and fills its defaults.
func (cfg *Config) validate() error {
	if cfg.Dir == "" || cfg.Bin == "" {
		return errors.New("cluster: Config.Dir and Config.Bin are required")
	}
	if cfg.Etcd == "" {
		cfg.Etcd = "etcd"
	}
	for _, n := range cfg.NodeNames {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || n == "admin" {
			return fmt.Errorf("cluster: node name %q: not a DNS subdomain, or admin", n)
		}
	}
	if a := cfg.AdvertiseAddress; a != "" {
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil || ip.IsLoopback() || ip.IsUnspecified() {
			return fmt.Errorf("cluster: Config.AdvertiseAddress %q: not an IPv4 address other than loopback", a)
		}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return os.MkdirAll(cfg.Dir, 0o755)
}

// start starts the processes in order, each once the one before is usable.
func (c *Cluster) start(ctx context.Context, etcdURL string) error {
	if err := c.etcd.start(); err != nil {
		return err
	}
	if err := c.waitFor(ctx, c.etcd, "etcd health", etcdHealthy(etcdURL)); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	for _, p := range c.procs[2:] {
		if err := p.start(); err != nil {
			return err
		}
	}
	// The controller manager makes the service account; watch it (and
	// not the scheduler, which has no such sign) while waiting.
	return c.waitFor(ctx, c.procs[2], "the default service account", c.defaultServiceAccount)
}

// startAPIServer starts the API server and waits for /readyz and the
// default namespace.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	if err := c.apiserver.start(); err != nil {
		return err
	}
	if err := c.waitFor(ctx, c.apiserver, "/readyz", c.readyz); err != nil {
		return err
	}
	return c.waitFor(ctx, c.apiserver, "the default namespace", c.defaultNamespace)
}

// RestartAPIServer stops the API server with SIGTERM (SIGKILL after 15 s)
// and starts it again on the same port, returning once it is ready again.
// The other components keep running and reconnect on their own.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	began := time.Now()
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	if err := c.StartAPIServer(ctx); err != nil {
		return fmt.Errorf("cluster: restart: %w", err)
	}
	c.logf("cluster: kube-apiserver restarted in %v", time.Since(began).Round(time.Millisecond))
	return nil
}

// StopAPIServer stops the API server with SIGTERM (SIGKILL after 15 s):
// its clients see it gone (a node losing its control plane) while etcd,
// the controller manager and the scheduler keep running.
// StartAPIServer starts it again.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("cluster: stopping the API server of a stopped cluster")
	}
	c.apiserver.stop(syscall.SIGTERM, stopGrace)
	return nil
}

// StartAPIServer starts the API server StopAPIServer stopped, on the same
// port, and returns once it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("cluster: starting the API server of a stopped cluster")
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return c.startAPIServer(ctx)
}

// Stop kills every component (SIGKILL to each process group, newest first)
// and waits for them. It reports a component that had exited on its own
// before Stop with a non-zero status. Stop may be called more than once;
// later calls do nothing. Dir is left in place.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	var errs []error
	for _, p := range slices.Backward(c.procs) {
		if done, err := p.exited(); done && err != nil {
			errs = append(errs, fmt.Errorf("%s had exited: %w (see %s)", p.name, err, p.log))
		}
		p.stop(syscall.SIGKILL, stopGrace)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// Dir is Config.Dir: certificates, kubeconfigs, etcd's data and the logs
// <component>.log.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// Server is the API server's URL, https://127.0.0.1:<port>.
func (c *Cluster) Server() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port))
}

// CAFile is the cluster CA's certificate (PEM), which signed the API
// server's serving certificate and every client certificate.
func (c *Cluster) CAFile() string { return filepath.Join(c.cfg.Dir, "ca.crt") }

// Kubeconfig returns the path of the kubeconfig for name: "admin"
// (system:masters) or one of Config.NodeNames (system:node:<name>); "" for
// any other name.
func (c *Cluster) Kubeconfig(name string) string {
	switch {
	case name == "admin":
		return filepath.Join(c.cfg.Dir, "admin.kubeconfig")
	case slices.Contains(c.cfg.NodeNames, name):
		return filepath.Join(c.cfg.Dir, nodeKubeconfig(name))
	}
	return ""
}

// RESTConfig is the client configuration of Kubeconfig(name), for
// client-go or skiff's apiclient.New.
func (c *Cluster) RESTConfig(name string) (*rest.Config, error) {
	path := c.Kubeconfig(name)
	if path == "" {
		return nil, fmt.Errorf("cluster: no kubeconfig for %q", name)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("cluster: kubeconfig for %q: %w", name, err)
	}
	return rc, nil
}

// Client is a clientset with the admin's credentials (system:masters).
func (c *Cluster) Client() kubernetes.Interface { return c.client }

func (c *Cluster) logf(format string, args ...any) { c.cfg.Logf(format, args...) }
