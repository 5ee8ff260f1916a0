package main

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

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	kubelettypes "k8s.io/kubelet/pkg/types"

	"github.com/skiffnode/skiff/apiclient"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/server"
)

// The kubelet's --authorization-mode values.
const (
	authzAlwaysAllow = "AlwaysAllow"
	authzWebhook     = "Webhook"
)

// defaultKubeletPort is the kubelet's --port.
const defaultKubeletPort = 10250

// kubeletAPIOptions are the flags of the kubelet API, the authenticated
// HTTPS port the API server reaches for logs, exec, attach, port-forward
// and stats (issue 16, H.25); names are the kubelet's. The defaults are
// the kubelet's configuration-file defaults, not its bare flags' (issue
// 29, ARCHITECTURE.md "The kubelet API is shut by default"): no anonymous
// requests, and with an API server bearer tokens through TokenReview,
// client certificates of its CA and Webhook authorization. Those that
// depend on how the agent runs are set by resolve.
type kubeletAPIOptions struct {
	port              int
	bindAddress       string
	tlsCertFile       string
	tlsKeyFile        string
	certDir           string
	clientCAFile      string
	anonymousAuth     bool
	tokenWebhook      bool
	authorizationMode string
}

func addKubeletAPIFlags(f *pflag.FlagSet, o *kubeletAPIOptions) {
	f.IntVar(&o.port, "port", defaultKubeletPort, "HTTPS port of the kubelet API (logs, exec, attach, port-forward, stats; 0 disables)")
	f.StringVar(&o.bindAddress, "bind-address", "", "IP address --port listens on (default: 127.0.0.1 with --control-plane, whose API server runs on this machine; else all interfaces, as the kubelet's --address)")
	f.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serving certificate of --port (with its intermediates); empty: a self-signed one in --cert-dir")
	f.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	f.StringVar(&o.certDir, "cert-dir", "", "directory of the self-signed serving certificate, kubelet.crt and kubelet.key, generated once (default <root-dir>/pki)")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "CA bundle for client certificates on --port: a client certificate signed by one of them is the user of its common name, in the groups of its organizations (default: with --kubeconfig or --control-plane, the CA of the API server's kubeconfig, as kubeadm points the kubelet at the cluster CA)")
	f.BoolVar(&o.anonymousAuth, "anonymous-auth", false, "let requests to --port without credentials through as system:anonymous (group system:unauthenticated), for whatever --authorization-mode allows them: with AlwaysAllow, anyone who reaches --port may list every pod and run commands in its containers as root")
	f.BoolVar(&o.tokenWebhook, "authentication-token-webhook", false, "authenticate bearer tokens on --port with the API server's TokenReview (default: true with --kubeconfig or --control-plane; needs one of them)")
	f.StringVar(&o.authorizationMode, "authorization-mode", "", "authorization of requests to --port: Webhook (a SubjectAccessReview to the API server for each; needs --kubeconfig or --control-plane) or AlwaysAllow (every authenticated request is allowed) (default: Webhook with an API server, else AlwaysAllow)")
}

// resolve applies the defaults that depend on how the agent runs, to the
// flags that neither the command line nor --config set: joins says whether
// the agent joins an API server (--kubeconfig or --control-plane), local
// whether that API server runs on this machine (--control-plane). Without
// one, --port is served only when asked for.
func (o *kubeletAPIOptions) resolve(f *pflag.FlagSet, joins, local bool) {
	if !joins && !f.Changed("port") {
		o.port = 0
	}
	if !f.Changed("authentication-token-webhook") {
		o.tokenWebhook = joins
	}
	if !f.Changed("authorization-mode") {
		o.authorizationMode = authzAlwaysAllow
		if joins {
			o.authorizationMode = authzWebhook
		}
	}
	if !f.Changed("bind-address") && local {
		o.bindAddress = "127.0.0.1"
	}
}

// apiServerHost is the host at which an API server on this machine
// (--control-plane) reaches the kubelet API: --bind-address, or loopback
// when it listens on all interfaces.
func (o *kubeletAPIOptions) apiServerHost() string {
	if ip := net.ParseIP(o.bindAddress); ip != nil && !ip.IsUnspecified() {
		return o.bindAddress
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
func (o *kubeletAPIOptions) newKubeletAPI(d kubeletAPIDeps) (*kubeletAPI, error) {
	if err := o.validate(d.Client != nil); err != nil || o.port == 0 {
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
	certDir := o.certDir
	if certDir == "" {
		certDir = filepath.Join(d.RootDir, "pki")
	}
	certFile, keyFile, err := server.ServingCertFiles(o.tlsCertFile, o.tlsKeyFile, certDir, d.NodeName)
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
		srv: server.New(cfg), addr: net.JoinHostPort(o.bindAddress, strconv.Itoa(o.port)), tls: tlsCfg, auth: auth,
	}
	o.logAccess(d.Logger, k.addr, caFrom)
	return k, nil
}

// clientCAs are the CAs client certificates are verified against, and
// where they come from: --client-ca-file, else the API server's CA
// (clusterCA), else none.
func (o *kubeletAPIOptions) clientCAs(clusterCA []byte) (*x509.CertPool, string, error) {
	switch {
	case o.clientCAFile != "":
		pool, err := server.LoadClientCAs(o.clientCAFile)
		return pool, "--client-ca-file " + o.clientCAFile, err
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
func (o *kubeletAPIOptions) logAccess(log *slog.Logger, addr, clientCAs string) {
	if log == nil {
		return
	}
	log.Info("kubelet API", "address", addr, "anonymous", o.anonymousAuth, "clientCAs", clientCAs,
		"tokenReview", o.tokenWebhook, "authorization", o.authorizationMode)
	if o.anonymousAuth && o.authorizationMode == authzAlwaysAllow && !isLoopback(o.bindAddress) {
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
func (o *kubeletAPIOptions) validate(apiServer bool) error {
	switch {
	case o.port < 0 || o.port > 65535:
		return fmt.Errorf("--port %d: want 1-65535, or 0 to disable the kubelet API", o.port)
	case o.port == 0:
		return nil
	case o.bindAddress != "" && net.ParseIP(o.bindAddress) == nil:
		return fmt.Errorf("--bind-address %q: want an IP address", o.bindAddress)
	case (o.tlsCertFile == "") != (o.tlsKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	case o.authorizationMode != authzAlwaysAllow && o.authorizationMode != authzWebhook:
		return fmt.Errorf("--authorization-mode %q: want %s or %s", o.authorizationMode, authzAlwaysAllow, authzWebhook)
	case o.authorizationMode == authzWebhook && !apiServer:
		return errors.New("--authorization-mode Webhook needs an API server to ask: set --kubeconfig")
	case o.tokenWebhook && !apiServer:
		return errors.New("--authentication-token-webhook needs an API server to review tokens: set --kubeconfig")
	case !o.anonymousAuth && o.clientCAFile == "" && !o.tokenWebhook && !apiServer:
		return fmt.Errorf("--port %d: nobody could use the kubelet API: anonymous requests are refused (--anonymous-auth=false, the default) and there is no --client-ca-file; "+
			"set --client-ca-file, --port 0 to serve none, or --anonymous-auth=true to let in anyone who reaches it", o.port)
	}
	return nil
}

// auth builds the authentication and authorization of --port from the
// flags; tokens and reviews are nil without an API server.
func (o *kubeletAPIOptions) auth(node string, clientCAs *x509.CertPool, tokens server.TokenReviewer, reviews server.SubjectAccessReviewer) (*server.Auth, error) {
	authnCfg := server.AuthnConfig{ClientCAs: clientCAs, Anonymous: o.anonymousAuth}
	if o.tokenWebhook {
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
	switch o.authorizationMode {
	case authzAlwaysAllow:
		authz = server.AlwaysAllow{}
	case authzWebhook:
		if reviews == nil {
			return nil, fmt.Errorf("--authorization-mode Webhook needs an API server to ask: set --kubeconfig")
		}
		if authz, err = server.NewWebhookAuthorizer(server.WebhookConfig{Reviews: reviews}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--authorization-mode %q: want %s or %s", o.authorizationMode, authzAlwaysAllow, authzWebhook)
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
