package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
)

// Auth guards the kubelet API (--port) as the kubelet's auth filter does:
// every request is authenticated (401 "Unauthorized" when that fails),
// then authorized on the node by RequestAttributes (allowed if any of its
// attributes is; 403 with the kubelet's "Forbidden (user=..., verb=...,
// resource=..., subresource(s)=[...])" otherwise; 500 when the authorizer
// fails).
type Auth struct {
	// Authenticator identifies clients. Required.
	Authenticator *Authenticator
	// Authorizer decides. Required (AlwaysAllow{} for the kubelet's
	// default mode).
	Authorizer Authorizer
	// NodeName is the name authorized requests are on.
	NodeName string
	// Logger receives denials and failures (discarded when nil).
	Logger *slog.Logger
}

// Wrap returns next behind the authentication and authorization filter.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	log := a.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := a.Authenticator.Authenticate(r)
		if err != nil {
			log.Debug("kubelet API: unauthenticated request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := RequestAttributes(a.NodeName, u, r)
		subresources := make([]string, 0, len(attrs))
		for _, attr := range attrs {
			subresources = append(subresources, attr.Subresource)
			allowed, _, err := a.Authorizer.Authorize(r.Context(), attr)
			if err != nil {
				log.Error("kubelet API: authorization error", "user", u.Name, "verb", attr.Verb, "subresource", attr.Subresource, "err", err)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					u.Name, attr.Verb, attr.Resource, attr.Subresource), http.StatusInternalServerError)
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
		}
		log.Debug("kubelet API: forbidden", "user", u.Name, "verb", attrs[0].Verb, "subresources", subresources)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)",
			u.Name, attrs[0].Verb, attrs[0].Resource, subresources), http.StatusForbidden)
	})
}

// ServeTLS serves the API over HTTPS on addr (host:port, the kubelet's
// --address and --port) until ctx is done, every request behind auth; see
// ServeUnix for the lifecycle. tlsConfig carries the serving certificate
// (NewTLSConfig). HTTP/2 is offered before HTTP/1.1, as by the kubelet:
// the API server reads logs over it (over HTTP/1.1 kube-apiserver 1.34
// loses a non-follow log that is complete before its websocket to the
// client is up), and its clients of the streaming endpoints ask for
// HTTP/1.1 themselves, to upgrade.
func (s *Server) ServeTLS(ctx context.Context, addr string, tlsConfig *tls.Config, auth *Auth) error {
	if auth == nil || auth.Authenticator == nil || auth.Authorizer == nil {
		return errors.New("serve kubelet API: no authentication or authorization")
	}
	if tlsConfig == nil || (len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil) {
		return errors.New("serve kubelet API: no serving certificate")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	cfg := tlsConfig.Clone()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	s.log.Info("serving kubelet API (HTTPS)", "address", ln.Addr().String())
	return s.serve(ctx, tls.NewListener(ln, cfg), auth.Wrap(s.Handler()))
}
