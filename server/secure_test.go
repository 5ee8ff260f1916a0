package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// subresourceAuthorizer allows the subresources in allow (for any user)
// and records what it was asked.
type subresourceAuthorizer struct {
	mu    sync.Mutex
	allow map[string]bool
	err   error
	asked []string
}

func (f *subresourceAuthorizer) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, a.User.Name+" "+a.Verb+" "+a.Subresource)
	return f.allow[a.Subresource], "", f.err
}

// TestAuthFilter checks the kubelet's answers to unauthenticated,
// forbidden and failing requests, and that a request passes when any of
// its attributes is allowed (H.25).
func TestAuthFilter(t *testing.T) {
	tests := []struct {
		name      string
		anonymous bool
		allow     map[string]bool
		authzErr  error
		method    string
		path      string
		wantCode  int
		wantBody  string
		wantAsked []string
	}{
		{name: "unauthenticated", method: "GET", path: "/pods", wantCode: 401, wantBody: "Unauthorized\n"},
		{name: "allowed", anonymous: true, allow: map[string]bool{"stats": true}, method: "GET", path: "/stats/summary",
			wantCode: 200, wantBody: "served\n", wantAsked: []string{"system:anonymous get stats"}},
		{name: "pods allowed by proxy", anonymous: true, allow: map[string]bool{"proxy": true}, method: "GET", path: "/pods",
			wantCode: 200, wantBody: "served\n", wantAsked: []string{"system:anonymous get pods", "system:anonymous get proxy"}},
		{name: "pods allowed by pods", anonymous: true, allow: map[string]bool{"pods": true}, method: "GET", path: "/pods",
			wantCode: 200, wantBody: "served\n", wantAsked: []string{"system:anonymous get pods"}},
		{name: "forbidden", anonymous: true, method: "GET", path: "/pods", wantCode: 403,
			wantBody:  "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
			wantAsked: []string{"system:anonymous get pods", "system:anonymous get proxy"}},
		{name: "forbidden exec", anonymous: true, allow: map[string]bool{"stats": true}, method: "POST", path: "/exec/default/web/app", wantCode: 403,
			wantBody:  "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])\n",
			wantAsked: []string{"system:anonymous create proxy"}},
		{name: "authorizer error", anonymous: true, authzErr: errors.New("down"), method: "GET", path: "/metrics", wantCode: 500,
			wantBody:  "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=metrics)\n",
			wantAsked: []string{"system:anonymous get metrics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authn, err := NewAuthenticator(AuthnConfig{Anonymous: tt.anonymous, ClientCAs: x509.NewCertPool()})
			if err != nil {
				t.Fatal(err)
			}
			authz := &subresourceAuthorizer{allow: tt.allow, err: tt.authzErr}
			h := (&Auth{Authenticator: authn, Authorizer: authz, NodeName: "node1"}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "served\n")
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if !reflect.DeepEqual(authz.asked, tt.wantAsked) {
				t.Errorf("authorizer asked %q, want %q", authz.asked, tt.wantAsked)
			}
		})
	}
}

// TestServeTLS serves the API over HTTPS with a generated certificate and
// client certificates checked against a CA, anonymous requests disabled:
// a client with a certificate of the CA gets its pods, one without gets
// 401.
func TestServeTLS(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	certFile, keyFile, err := ServingCertFiles("", "", filepath.Join(t.TempDir(), "pki"), "node1")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := NewTLSConfig(certFile, keyFile, ca.pool)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := NewAuthenticator(AuthnConfig{ClientCAs: ca.pool})
	if err != nil {
		t.Fatal(err)
	}
	pods := &fakePods{}
	pods.set(webPod(running()))
	s := New(Config{Pods: pods})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- s.ServeTLS(ctx, addr, tlsCfg, &Auth{Authenticator: authn, Authorizer: AlwaysAllow{}, NodeName: "node1"})
	}()
	defer func() {
		cancel()
		if err := waitErr(t, errc); err != nil {
			t.Errorf("ServeTLS: %v", err)
		}
	}()
	serving, err := certsFromFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	proto := 0
	get := func(cert *tls.Certificate, h2 bool) (int, string) {
		t.Helper()
		cfg := &tls.Config{RootCAs: serving, ServerName: "node1"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2}, Timeout: 10 * time.Second}
		defer hc.CloseIdleConnections()
		var resp *http.Response
		for range 100 { // until the listener is up
			if resp, err = hc.Get("https://" + addr + "/pods"); err == nil || !strings.Contains(err.Error(), "refused") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		proto = resp.ProtoMajor
		return resp.StatusCode, string(body)
	}
	client := ca.client(t, "kube-apiserver-kubelet-client", "system:masters")
	if code, body := get(&client, false); code != 200 || !strings.Contains(body, `"name":"web"`) || proto != 1 {
		t.Errorf("with client certificate over HTTP/1.1: %d %q (HTTP/%d), want 200 with the pod list", code, body, proto)
	}
	// HTTP/2 as the kubelet offers it (the API server reads logs over it).
	if code, _ := get(&client, true); code != 200 || proto != 2 {
		t.Errorf("over HTTP/2: %d (HTTP/%d), want 200 over HTTP/2", code, proto)
	}
	if code, body := get(nil, false); code != 401 || body != "Unauthorized\n" {
		t.Errorf("without client certificate: %d %q, want 401", code, body)
	}
}

// TestServeTLSRefusesNoAuth checks that the HTTPS API never serves
// without authentication, authorization and a certificate.
func TestServeTLSRefusesNoAuth(t *testing.T) {
	s := New(Config{})
	authn, err := NewAuthenticator(AuthnConfig{Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range map[string]*Auth{
		"nil":          nil,
		"no authz":     {Authenticator: authn},
		"no authn":     {Authorizer: AlwaysAllow{}},
		"no cert only": {Authenticator: authn, Authorizer: AlwaysAllow{}},
	} {
		if err := s.ServeTLS(context.Background(), "127.0.0.1:0", &tls.Config{}, auth); err == nil {
			t.Errorf("%s: ServeTLS served", name)
		}
	}
}
