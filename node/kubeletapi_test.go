package node

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
	"github.com/skiffnode/skiff/server"
)

// parseKubeletAPIFlags parses args into a KubeletAPIConfig, without the
// defaults that depend on how the agent runs (resolve).
func parseKubeletAPIFlags(t *testing.T, args ...string) *KubeletAPIConfig {
	t.Helper()
	o := &KubeletAPIConfig{}
	f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	// The kubelet API's flags as the tests use them, with `skiff agent`'s
	// defaults (cmd/skiff binds the real ones; TestKubeletAPIFlagDefaults
	// there checks them).
	f.IntVar(&o.Port, "port", DefaultKubeletPort, "")
	f.StringVar(&o.BindAddress, "bind-address", "", "")
	f.StringVar(&o.ClientCAFile, "client-ca-file", "", "")
	f.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "")
	f.BoolVar(&o.TokenWebhook, "authentication-token-webhook", false, "")
	f.StringVar(&o.AuthorizationMode, "authorization-mode", "", "")
	f.StringVar(&o.TLSCertFile, "tls-cert-file", "", "")
	f.StringVar(&o.TLSKeyFile, "tls-private-key-file", "", "")
	f.StringVar(&o.CertDir, "cert-dir", "", "")
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKubeletAPIServerHost: the shim reaches the kubelet API at
// --bind-address, or on loopback when it listens on all interfaces.
func TestKubeletAPIServerHost(t *testing.T) {
	for addr, want := range map[string]string{"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "127.0.0.1",
		"127.0.0.1": "127.0.0.1", "192.0.2.7": "192.0.2.7"} {
		if got := (&KubeletAPIConfig{BindAddress: addr}).apiServerHost(); got != want {
			t.Errorf("--bind-address %q: host %q, want %q", addr, got, want)
		}
	}
}

// reviewers answers token and access reviews, allowing everything.
type reviewers struct{}

func (reviewers) CreateTokenReview(_ context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	return tr, nil
}

func (reviewers) CreateSubjectAccessReview(_ context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	out := sar.DeepCopy()
	out.Status.Allowed = true
	return out, nil
}

// TestKubeletAPIAuthFromFlags checks which authorizer the flags choose and
// that the modes needing an API server fail, naming their flag, without
// one.
func TestKubeletAPIAuthFromFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		apiServer bool
		wantAuthz string // "allow" or "webhook"
		wantErr   string
	}{
		{name: "defaults", args: []string{"--authorization-mode=AlwaysAllow", "--anonymous-auth"}, wantAuthz: "allow"},
		{name: "webhook", args: []string{"--authorization-mode=Webhook", "--authentication-token-webhook", "--anonymous-auth=false"},
			apiServer: true, wantAuthz: "webhook"},
		{name: "webhook authorization without API server", args: []string{"--authorization-mode=Webhook", "--anonymous-auth"},
			wantErr: "--authorization-mode Webhook needs an API server to ask: set --kubeconfig"},
		{name: "token webhook without API server", args: []string{"--authentication-token-webhook"},
			wantErr: "--authentication-token-webhook needs an API server to review tokens: set --kubeconfig"},
		{name: "unknown mode", args: []string{"--authorization-mode=RBAC", "--anonymous-auth"}, apiServer: true,
			wantErr: `--authorization-mode "RBAC": want AlwaysAllow or Webhook`},
		{name: "no way in", args: []string{"--anonymous-auth=false"}, apiServer: true,
			wantErr: "no authentication method configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parseKubeletAPIFlags(t, tt.args...)
			var tokens server.TokenReviewer
			var reviews server.SubjectAccessReviewer
			if tt.apiServer {
				tokens, reviews = reviewers{}, reviewers{}
			}
			auth, err := o.auth("node1", nil, tokens, reviews)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch auth.Authorizer.(type) {
			case server.AlwaysAllow:
				if tt.wantAuthz != "allow" {
					t.Errorf("authorizer AlwaysAllow, want %s", tt.wantAuthz)
				}
			case *server.WebhookAuthorizer:
				if tt.wantAuthz != "webhook" {
					t.Errorf("authorizer Webhook, want %s", tt.wantAuthz)
				}
			default:
				t.Errorf("authorizer %T", auth.Authorizer)
			}
			if auth.NodeName != "node1" {
				t.Errorf("node = %q", auth.NodeName)
			}
		})
	}
}

// TestKubeletAPIValidate checks the flag errors the agent reports before
// it starts anything.
func TestKubeletAPIValidate(t *testing.T) {
	tests := []struct {
		args      []string
		apiServer bool
		wantErr   string
	}{
		{args: []string{"--authorization-mode=AlwaysAllow", "--client-ca-file=/ca.crt"}},
		{args: []string{"--port=0", "--authorization-mode=Webhook"}},
		{args: []string{"--port=-1"}, wantErr: "--port -1"},
		{args: []string{"--authorization-mode=AlwaysAllow", "--tls-cert-file=/x.crt", "--anonymous-auth"}, wantErr: "--tls-cert-file and --tls-private-key-file must be given together"},
		{args: []string{"--authorization-mode=Node"}, apiServer: true, wantErr: `--authorization-mode "Node"`},
		{args: []string{"--authorization-mode=Webhook"}, wantErr: "--authorization-mode Webhook needs an API server"},
		{args: []string{"--authorization-mode=Webhook"}, apiServer: true},
		{args: []string{"--authorization-mode=AlwaysAllow", "--authentication-token-webhook"}, wantErr: "--authentication-token-webhook needs an API server"},
		{args: []string{"--authorization-mode=AlwaysAllow", "--bind-address=localhost", "--anonymous-auth"}, wantErr: `--bind-address "localhost": want an IP address`},
		// Static only, --port and nothing else: a clear error, not a port
		// that refuses everyone.
		{args: []string{"--authorization-mode=AlwaysAllow"}, wantErr: "--port 10250: nobody could use the kubelet API"},
		{args: []string{"--authorization-mode=AlwaysAllow", "--anonymous-auth"}},
		// With an API server its kubeconfig's CA (or a token review) is a way in.
		{args: []string{"--authorization-mode=Webhook"}, apiServer: true},
	}
	for _, tt := range tests {
		err := parseKubeletAPIFlags(t, tt.args...).validate(tt.apiServer)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("validate(%q, API server %v) = %v, want %q", tt.args, tt.apiServer, err, tt.wantErr)
		}
	}
}

// TestNewKubeletAPI checks --port 0, the port range, that a nil API
// client fails Webhook mode, and the self-signed certificate in
// <root-dir>/pki.
func TestNewKubeletAPI(t *testing.T) {
	root := t.TempDir()
	deps := kubeletAPIDeps{RootDir: root, NodeName: "node1", Config: server.Config{Profiling: true}}
	if k, err := parseKubeletAPIFlags(t, "--port=0").newKubeletAPI(deps); k != nil || err != nil {
		t.Errorf("--port 0: %v, %v; want nothing to serve", k, err)
	}
	if _, err := parseKubeletAPIFlags(t, "--port=70000").newKubeletAPI(deps); err == nil || !strings.Contains(err.Error(), "--port 70000") {
		t.Errorf("--port 70000: err = %v", err)
	}
	if _, err := parseKubeletAPIFlags(t, "--authorization-mode=Webhook").newKubeletAPI(deps); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("Webhook without client: err = %v", err)
	}
	if _, err := parseKubeletAPIFlags(t, "--authorization-mode=AlwaysAllow", "--client-ca-file", filepath.Join(root, "nope.crt")).newKubeletAPI(deps); err == nil || !strings.Contains(err.Error(), "--client-ca-file") {
		t.Errorf("missing CA file: err = %v", err)
	}
	if _, err := parseKubeletAPIFlags(t, "--authorization-mode=AlwaysAllow").newKubeletAPI(deps); err == nil || !strings.Contains(err.Error(), "nobody could use") {
		t.Errorf("no way in: err = %v", err)
	}
	k, err := parseKubeletAPIFlags(t, "--authorization-mode=AlwaysAllow", "--anonymous-auth").newKubeletAPI(deps)
	if err != nil {
		t.Fatal(err)
	}
	if k.addr != ":10250" {
		t.Errorf("address = %q, want :10250", k.addr)
	}
	if k, err := parseKubeletAPIFlags(t, "--authorization-mode=AlwaysAllow", "--anonymous-auth", "--bind-address=127.0.0.1").newKubeletAPI(deps); err != nil || k.addr != "127.0.0.1:10250" {
		t.Errorf("--bind-address 127.0.0.1: %v, %v", k, err)
	}
	for _, name := range []string{"kubelet.crt", "kubelet.key"} {
		if _, err := os.Stat(filepath.Join(root, "pki", name)); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
}

// TestPodSandboxes checks that port-forward finds the pod's newest ready
// sandbox by the pod UID label, and ErrNotFound without one.
func TestPodSandboxes(t *testing.T) {
	now := time.Unix(1000, 0)
	rt := fake.New(func() time.Time { now = now.Add(time.Second); return now })
	ctx := context.Background()
	run := func(uid string) string {
		id, err := rt.RunSandbox(ctx, &runtime.SandboxSpec{Name: "web", Namespace: "default", UID: uid,
			Labels: map[string]string{"io.kubernetes.pod.uid": uid}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	old, newer := run("uid-1"), run("uid-1")
	run("uid-2")
	var cfg server.Config
	withStreaming(&cfg, rt)
	if cfg.Streamer == nil || cfg.Sandboxes == nil {
		t.Fatal("withStreaming: no streaming for a runtime that has it")
	}
	for _, step := range []struct {
		stop, want string
	}{
		{want: newer},            // both ready: the newest
		{stop: newer, want: old}, // only the old one is ready
		{stop: old, want: ""},    // none
	} {
		if step.stop != "" {
			if err := rt.StopSandbox(ctx, step.stop); err != nil {
				t.Fatal(err)
			}
		}
		got, err := cfg.Sandboxes.PodSandboxID(ctx, "uid-1")
		if step.want == "" {
			if !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("PodSandboxID without ready sandbox: %q, %v; want ErrNotFound", got, err)
			}
			continue
		}
		if got != step.want || err != nil {
			t.Errorf("PodSandboxID(uid-1) = %q, %v; want %q", got, err, step.want)
		}
	}
}

// serveKubeletAPI serves the kubelet API of cfg, opened to anonymous
// requests with AlwaysAllow and a self-signed certificate, on a free
// loopback port until the test ends; it returns the API's URL and a
// client that does not verify the certificate, as the API server does not
// without --kubelet-certificate-authority.
func serveKubeletAPI(t *testing.T, cfg server.Config) (string, *http.Client) {
	t.Helper()
	return serveKubeletAPIWith(t, cfg, kubeletAPIDeps{}, "--anonymous-auth", "--authorization-mode=AlwaysAllow")
}

// serveKubeletAPIWith serves the kubelet API of cfg with the flags args
// and deps (the root directory, node name and Config are filled in) on a
// free loopback port until the test ends, as serveKubeletAPI.
func serveKubeletAPIWith(t *testing.T, cfg server.Config, deps kubeletAPIDeps, args ...string) (string, *http.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	o := parseKubeletAPIFlags(t, append([]string{"--port", strconv.Itoa(port), "--bind-address", "127.0.0.1"}, args...)...)
	deps.RootDir, deps.NodeName, deps.Config = t.TempDir(), "node1", cfg
	k, err := o.newKubeletAPI(deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.serve(ctx) }()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "https://127.0.0.1:" + strconv.Itoa(port), hc
}

// get GETs url with hc, retrying while the server is not up yet, and
// returns the status, the content type and the body.
func get(t *testing.T, hc *http.Client, url string) (int, string, string) {
	t.Helper()
	var resp *http.Response
	var err error
	for range 100 {
		if resp, err = hc.Get(url); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// TestKubeletAPIServes serves the kubelet API with the defaults and asks
// /healthz.
func TestKubeletAPIServes(t *testing.T) {
	url, hc := serveKubeletAPI(t, server.Config{})
	if code, _, body := get(t, hc, url+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("GET /healthz = %d %q, want 200 ok", code, body)
	}
}
