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
// and stats (issue 16, H.25); names and defaults are the kubelet's.
type kubeletAPIOptions struct {
	port              int
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
	f.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serving certificate of --port (with its intermediates); empty: a self-signed one in --cert-dir")
	f.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	f.StringVar(&o.certDir, "cert-dir", "", "directory of the self-signed serving certificate, kubelet.crt and kubelet.key, generated once (default <root-dir>/pki)")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "CA bundle for client certificates on --port: a client certificate signed by one of them is the user of its common name, in the groups of its organizations")
	f.BoolVar(&o.anonymousAuth, "anonymous-auth", true, "let requests to --port without credentials through as system:anonymous (group system:unauthenticated)")
	f.BoolVar(&o.tokenWebhook, "authentication-token-webhook", false, "authenticate bearer tokens on --port with the API server's TokenReview (needs --kubeconfig)")
	f.StringVar(&o.authorizationMode, "authorization-mode", authzAlwaysAllow, "authorization of requests to --port: AlwaysAllow, or Webhook (the API server's SubjectAccessReview; needs --kubeconfig)")
}

// kubeletAPIDeps is what the kubelet API serves and whom it asks.
type kubeletAPIDeps struct {
	// Address is the IP to listen on (the kubelet's --address); empty:
	// all interfaces.
	Address string
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
	var clientCAs *x509.CertPool
	if o.clientCAFile != "" {
		var err error
		if clientCAs, err = server.LoadClientCAs(o.clientCAFile); err != nil {
			return nil, err
		}
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
	return &kubeletAPI{
		srv: server.New(cfg), addr: net.JoinHostPort(d.Address, strconv.Itoa(o.port)), tls: tlsCfg, auth: auth,
	}, nil
}

// validate checks the flags without touching files, so that the agent
// can refuse them before it starts anything; apiServer says whether
// --kubeconfig names one.
func (o *kubeletAPIOptions) validate(apiServer bool) error {
	switch {
	case o.port < 0 || o.port > 65535:
		return fmt.Errorf("--port %d: want 1-65535, or 0 to disable the kubelet API", o.port)
	case o.port == 0:
		return nil
	case (o.tlsCertFile == "") != (o.tlsKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	case o.authorizationMode != authzAlwaysAllow && o.authorizationMode != authzWebhook:
		return fmt.Errorf("--authorization-mode %q: want %s or %s", o.authorizationMode, authzAlwaysAllow, authzWebhook)
	case o.authorizationMode == authzWebhook && !apiServer:
		return errors.New("--authorization-mode Webhook needs an API server to ask: set --kubeconfig")
	case o.tokenWebhook && !apiServer:
		return errors.New("--authentication-token-webhook needs an API server to review tokens: set --kubeconfig")
	case !o.anonymousAuth && o.clientCAFile == "" && !o.tokenWebhook:
		return errors.New("--anonymous-auth=false leaves no way in: set --client-ca-file or --authentication-token-webhook")
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
