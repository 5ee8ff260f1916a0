package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	kubelettypes "k8s.io/kubelet/pkg/types"

	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

// The kubelet's --authorization-mode values.
const (
	AuthzAlwaysAllow = "AlwaysAllow"
	AuthzWebhook     = "Webhook"
)

// DefaultKubeletPort is the kubelet's --port.
const DefaultKubeletPort = 10250

// kubeletAPIOptions are the flags of the kubelet API, the authenticated
// HTTPS port the API server reaches for logs, exec, attach, port-forward
// and stats (issue 16, H.25); names are the kubelet's. The defaults are
// the kubelet's configuration-file defaults, not its bare flags' (issue
// 29, docs/decisions/0081-kubelet-api-shut-default.md): no anonymous
// requests, and with an API server bearer tokens through TokenReview,
// client certificates of its CA and Webhook authorization. Those that
// depend on how the agent runs are set by resolve.
type KubeletAPIConfig struct {
	Port              int
	BindAddress       string
	TLSCertFile       string
	TLSKeyFile        string
	CertDir           string
	ClientCAFile      string
	AnonymousAuth     bool
	TokenWebhook      bool
	AuthorizationMode string
}

// apiServerHost is the host at which an API server on this machine
// (--control-plane) reaches the kubelet API: --bind-address, or loopback
// when it listens on all interfaces.
func (o *KubeletAPIConfig) apiServerHost() string {
	if ip := net.ParseIP(o.BindAddress); ip != nil && !ip.IsUnspecified() {
		return o.BindAddress
	}
	return "127.0.0.1"
}

// kubeletAPIDeps is what the kubelet API serves and whom it asks.
type kubeletAPIDeps struct {
	// RootDir holds the default --cert-dir, <root-dir>/pki.
	RootDir string
	// NodeName names the self-signed certificate's host and the node
	// requests are authorized on.
	NodeName string
	// Config is the API to serve: the unix socket's (pods, logs, events,
	// /run, stats, streaming); image management and profiling are left
	// out.
	Config server.Config
	// Client is the API server client with --kubeconfig, nil without;
	// --authentication-token-webhook and --authorization-mode Webhook
	// need it.
	Client *apiclient.Client
	// ClusterCA is the PEM CA bundle of the API server's kubeconfig (nil
	// without one): the client CAs when --client-ca-file is not given.
	ClusterCA []byte
	// Logger receives the API's logs.
	Logger *slog.Logger
}

// kubeletAPI is the kubelet API, ready to serve.
type kubeletAPI struct {
	srv  *server.Server
	addr string
	tls  *tls.Config
	auth *server.Auth
}

// newKubeletAPI checks the flags, loads (or generates) the serving
// certificate and the client CAs, and builds the authenticator and the
// authorizer. It returns nil, nil with --port 0. Nothing listens yet.
func (o *KubeletAPIConfig) newKubeletAPI(d kubeletAPIDeps) (*kubeletAPI, error) {
	if err := o.validate(d.Client != nil); err != nil || o.Port == 0 {
		return nil, err
	}
	// Only a non-nil client becomes an interface: a nil *apiclient.Client
	// in one would not compare equal to nil.
	var tokens server.TokenReviewer
	var reviews server.SubjectAccessReviewer
	if d.Client != nil {
		tokens, reviews = d.Client, d.Client
	}
	clientCAs, caFrom, err := o.clientCAs(d.ClusterCA)
	if err != nil {
		return nil, err
	}
	auth, err := o.auth(d.NodeName, clientCAs, tokens, reviews)
	if err != nil {
		return nil, err
	}
	auth.Logger = d.Logger
	certDir := o.CertDir
	if certDir == "" {
		certDir = filepath.Join(d.RootDir, "pki")
	}
	certFile, keyFile, err := server.ServingCertFiles(o.TLSCertFile, o.TLSKeyFile, certDir, d.NodeName)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := server.NewTLSConfig(certFile, keyFile, clientCAs)
	if err != nil {
		return nil, err
	}
	cfg := d.Config
	cfg.Images, cfg.Profiling = nil, false
	k := &kubeletAPI{
		srv: server.New(cfg), addr: net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port)), tls: tlsCfg, auth: auth,
	}
	o.logAccess(d.Logger, k.addr, caFrom)
	return k, nil
}

// clientCAs are the CAs client certificates are verified against, and
// where they come from: --client-ca-file, else the API server's CA
// (clusterCA), else none.
func (o *KubeletAPIConfig) clientCAs(clusterCA []byte) (*x509.CertPool, string, error) {
	switch {
	case o.ClientCAFile != "":
		pool, err := server.LoadClientCAs(o.ClientCAFile)
		return pool, "--client-ca-file " + o.ClientCAFile, err
	case len(clusterCA) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(clusterCA) {
			return nil, "", errors.New("client CAs of --port: the API server's kubeconfig has a CA with no PEM certificate; set --client-ca-file")
		}
		return pool, "the API server's kubeconfig", nil
	}
	return nil, "none", nil
}

// logAccess says who may use the kubelet API at addr, and warns when
// anyone who reaches a non-loopback address may (the kubelet
// misconfiguration behind real cluster compromises).
func (o *KubeletAPIConfig) logAccess(log *slog.Logger, addr, clientCAs string) {
	if log == nil {
		return
	}
	log.Info("kubelet API", "address", addr, "anonymous", o.AnonymousAuth, "clientCAs", clientCAs,
		"tokenReview", o.TokenWebhook, "authorization", o.AuthorizationMode)
	if o.AnonymousAuth && o.AuthorizationMode == AuthzAlwaysAllow && !isLoopback(o.BindAddress) {
		log.Warn("the kubelet API is open: --anonymous-auth=true with --authorization-mode AlwaysAllow on a non-loopback address lets anyone who reaches it list every pod and run commands in its containers as root; "+
			"drop --anonymous-auth, or set --bind-address 127.0.0.1", "address", addr)
	}
}

// isLoopback reports whether the IP address host is a loopback one ("":
// all interfaces, not loopback).
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validate checks the flags without touching files, so that the agent
// can refuse them before it starts anything; apiServer says whether
// --kubeconfig names one (or --control-plane runs one).
func (o *KubeletAPIConfig) validate(apiServer bool) error {
	switch {
	case o.Port < 0 || o.Port > 65535:
		return fmt.Errorf("--port %d: want 1-65535, or 0 to disable the kubelet API", o.Port)
	case o.Port == 0:
		return nil
	case o.BindAddress != "" && net.ParseIP(o.BindAddress) == nil:
		return fmt.Errorf("--bind-address %q: want an IP address", o.BindAddress)
	case (o.TLSCertFile == "") != (o.TLSKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	case o.AuthorizationMode != AuthzAlwaysAllow && o.AuthorizationMode != AuthzWebhook:
		return fmt.Errorf("--authorization-mode %q: want %s or %s", o.AuthorizationMode, AuthzAlwaysAllow, AuthzWebhook)
	case o.AuthorizationMode == AuthzWebhook && !apiServer:
		return errors.New("--authorization-mode Webhook needs an API server to ask: set --kubeconfig")
	case o.TokenWebhook && !apiServer:
		return errors.New("--authentication-token-webhook needs an API server to review tokens: set --kubeconfig")
	case !o.AnonymousAuth && o.ClientCAFile == "" && !o.TokenWebhook && !apiServer:
		return fmt.Errorf("--port %d: nobody could use the kubelet API: anonymous requests are refused (--anonymous-auth=false, the default) and there is no --client-ca-file; "+
			"set --client-ca-file, --port 0 to serve none, or --anonymous-auth=true to let in anyone who reaches it", o.Port)
	}
	return nil
}

// auth builds the authentication and authorization of --port from the
// flags; tokens and reviews are nil without an API server.
func (o *KubeletAPIConfig) auth(node string, clientCAs *x509.CertPool, tokens server.TokenReviewer, reviews server.SubjectAccessReviewer) (*server.Auth, error) {
	authnCfg := server.AuthnConfig{ClientCAs: clientCAs, Anonymous: o.AnonymousAuth}
	if o.TokenWebhook {
		if tokens == nil {
			return nil, fmt.Errorf("--authentication-token-webhook needs an API server to review tokens: set --kubeconfig")
		}
		authnCfg.Tokens = tokens
	}
	authn, err := server.NewAuthenticator(authnCfg) // its error names the flags
	if err != nil {
		return nil, err
	}
	var authz server.Authorizer
	switch o.AuthorizationMode {
	case AuthzAlwaysAllow:
		authz = server.AlwaysAllow{}
	case AuthzWebhook:
		if reviews == nil {
			return nil, fmt.Errorf("--authorization-mode Webhook needs an API server to ask: set --kubeconfig")
		}
		if authz, err = server.NewWebhookAuthorizer(server.WebhookConfig{Reviews: reviews}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--authorization-mode %q: want %s or %s", o.AuthorizationMode, AuthzAlwaysAllow, AuthzWebhook)
	}
	return &server.Auth{Authenticator: authn, Authorizer: authz, NodeName: node}, nil
}

// serve serves the kubelet API until ctx is done (server.ServeTLS).
func (k *kubeletAPI) serve(ctx context.Context) error {
	return k.srv.ServeTLS(ctx, k.addr, k.tls, k.auth)
}

// withStreaming gives cfg the runtime's streaming sessions (exec, attach,
// port-forward) when the runtime has them.
func withStreaming(cfg *server.Config, rt runtime.Runtime) {
	if s, ok := rt.(runtime.Streamer); ok {
		cfg.Streamer, cfg.Sandboxes = s, podSandboxes{rt: rt}
	}
}

// podSandboxes finds a pod's sandbox by the kubelet's pod UID label, which
// the agent puts on every sandbox it runs.
type podSandboxes struct{ rt runtime.Sandboxes }

// PodSandboxID implements server.SandboxFinder: the newest ready sandbox
// of the pod.
func (p podSandboxes) PodSandboxID(ctx context.Context, uid types.UID) (string, error) {
	sbs, err := p.rt.ListSandboxes(ctx, map[string]string{kubelettypes.KubernetesPodUIDLabel: string(uid)})
	if err != nil {
		return "", fmt.Errorf("sandbox of pod %s: %w", uid, err)
	}
	var best *runtime.Sandbox
	for _, sb := range sbs {
		if sb.State == runtime.SandboxReady && (best == nil || sb.CreatedAt.After(best.CreatedAt)) {
			best = sb
		}
	}
	if best == nil {
		return "", fmt.Errorf("no ready sandbox for pod %s: %w", uid, runtime.ErrNotFound)
	}
	return best.ID, nil
}
