package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"k8s.io/streaming/pkg/httpstream"
)

// newStreamTransport returns the transport to the runtime's streaming
// server: direct (never through an HTTP proxy from the environment), and
// HTTP/1.1, the only protocol whose connections can be upgraded.
func newStreamTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
	}
}

// proxyStream proxies the client's upgrade request to the runtime's
// streaming URL target, and then the upgraded connection both ways until
// either side closes it or the server shuts down, as the kubelet's
// proxyStream (apimachinery's UpgradeAwareHandler with upgradeRequired;
// the standard library's ReverseProxy does the same for upgrades and needs
// no flow-rate or SPDY modules). The request goes to target's path and
// query (the session token), without the client's Authorization header. A
// request that is not an upgrade gets the kubelet's answer, 500 "Upgrade
// request required".
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, target string) {
	if !httpstream.IsUpgradeRequest(r) {
		http.Error(w, "Upgrade request required", http.StatusInternalServerError)
		return
	}
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		http.Error(w, fmt.Sprintf("runtime returned an invalid streaming URL %q", target), http.StatusInternalServerError)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
			pr.Out.Host = u.Host
			pr.Out.Header.Del("Authorization")
			pr.SetXForwarded()
		},
		Transport:     s.streamTransport,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			s.log.Debug("proxying stream", "target", u.Redacted(), "err", err)
			http.Error(w, "error while proxying request: "+err.Error(), http.StatusInternalServerError)
		},
	}
	rp.ServeHTTP(w, r)
}
