package probes

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffnode/skiff/internal/httpget"
)

// maxRedirects is how many same-host redirects a probe follows, as Go's
// default client and the kubelet.
const maxRedirects = 10

// HTTPProber runs httpGet probes (B.4): success iff 200 <= status < 400.
// HTTPS is used without certificate verification, no proxy is used, and
// every probe opens and closes its own connection (keep-alives off), like
// the kubelet. Redirects to the same host are followed; a redirect to
// another host is not, and counts as a Warning (success with an event).
// Safe for concurrent use.
type HTTPProber struct {
	transport *http.Transport
}

// NewHTTPProber returns an HTTPProber. Its transport keeps no idle
// connections, so it needs no Close.
func NewHTTPProber() *HTTPProber {
	return &HTTPProber{transport: &http.Transport{
		Proxy:       nil, // probes go straight to the pod, never through the node's proxy
		DialContext: newDialer().DialContext,
		// The kubelet does not verify probe certificates (B.15).
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
		DisableCompression:  true, // no Accept-Encoding: the body is read raw, truncated
	}}
}

// Probe sends req (see NewHTTPRequest) with the given timeout. Transport
// errors and timeouts are Failures whose output is the error text; a status
// of 400 or more is a Failure with output "HTTP probe failed with
// statuscode: N" (never the body); 2xx is a Success with the body (at most
// 10 KiB) as output; a 3xx that was not followed is a Warning with output
// "Probe terminated redirects, Response body: ...". The error is non-nil
// only when the body could not be read.
func (p *HTTPProber) Probe(ctx context.Context, req *http.Request, timeout time.Duration) (Result, string, error) {
	client := &http.Client{
		Timeout:       timeout,
		Transport:     p.transport,
		CheckRedirect: checkRedirect,
	}
	res, err := client.Do(req.WithContext(ctx))
	if err != nil {
		// Errors are failures, so that timeouts count against the threshold.
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutputLength))
	if err != nil {
		return Failure, "", fmt.Errorf("read probe response from %s: %w", req.URL.Redacted(), err)
	}
	body := string(b)
	switch {
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusMultipleChoices:
		return Success, body, nil
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		return Warning, "Probe terminated redirects, Response body: " + body, nil
	default:
		// The kubelet keeps the body out of the user-facing message
		// (kubernetes#99425).
		return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
	}
}

// checkRedirect follows redirects to the probed host only: a redirect to
// another host ends the probe with the redirect response (a Warning).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// NewHTTPRequest builds the GET request of an httpGet probe with
// httpget.NewRequest (shared with lifecycle hooks): scheme defaults to HTTP,
// host to podIP, port may be a number or the name of one of c's ports.
// User-Agent defaults to UserAgent and Accept to "*/*"; an httpHeaders entry
// overrides them (an empty Accept removes it), and a Host entry sets the
// request's Host. It fails when the port cannot be resolved.
func NewHTTPRequest(action *v1.HTTPGetAction, c *v1.Container, podIP string) (*http.Request, error) {
	if _, err := ResolvePort(action.Port, c); err != nil {
		return nil, err // with the probe's wording
	}
	req, err := httpget.NewRequest(action, c, podIP, UserAgent)
	if err != nil {
		return nil, fmt.Errorf("build probe request: %w", err)
	}
	return req, nil
}

// ResolvePort returns the port number of a probe (httpget.ResolvePort): a
// number, the name of one of c's ports, or (as a last resort, like the
// kubelet) a number written as a string. It fails for an unknown name
// (wrapping ErrPortNotFound) or a number outside 1-65535.
func ResolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	n, err := httpget.ResolvePort(port, c)
	if err != nil {
		return 0, fmt.Errorf("probe %w", err)
	}
	return n, nil
}

// ErrPortNotFound is wrapped by ResolvePort's error when a named port is
// not among the container's ports.
var ErrPortNotFound = httpget.ErrPortNotFound
