package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultSocket is where the agent serves its local API by default.
const DefaultSocket = "/var/lib/skiff/skiff.sock"

// maxErrorBody bounds how much of an error response the client reads.
const maxErrorBody = 64 << 10

// Client calls a skiff (or kubelet read-only) API. Safe for concurrent use.
type Client struct {
	base string // scheme://host, no trailing slash
	hc   *http.Client
}

// LogOptions selects the logs Client.Logs fetches.
type LogOptions struct {
	// Follow streams new output until the container stops or ctx is done.
	Follow bool
	// Previous reads the previous run of a restarted container.
	Previous bool
	// TailLines limits the output to the last lines; negative means all
	// (note that the zero value asks for none, like `--tail=0`).
	TailLines int
	// Timestamps prefixes each line with its RFC3339Nano time.
	Timestamps bool
}

// StatusError is the error for a non-2xx answer; Message is the server's.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("server answered %d %s", e.Code, http.StatusText(e.Code))
	}
	return e.Message
}

// NewClient returns a client for addr: a unix socket path
// ("/var/lib/skiff/skiff.sock" or "unix:///var/lib/skiff/skiff.sock") or an
// "http://host:port" (or https) URL. It does not connect.
func NewClient(addr string) (*Client, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok || strings.HasPrefix(addr, "/") {
		if !ok {
			path = addr
		}
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("unix socket path %q must be absolute", path)
		}
		return unixClient(path), nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("parse server address: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server address %q: want a unix socket path or an http://host:port URL", addr)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the API is local; never send it through a proxy
	return &Client{base: u.Scheme + "://" + u.Host, hc: &http.Client{Transport: tr}}, nil
}

func unixClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}
	return &Client{base: "http://localhost", hc: &http.Client{Transport: tr}}
}

// Pods returns the node's pods (GET /pods).
func (c *Client) Pods(ctx context.Context) (*v1.PodList, error) {
	resp, err := c.get(ctx, "/pods", nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode pod list: %w", err)
	}
	return &list, nil
}

// Logs copies a container's log to w (GET /containerLogs/...). With
// opts.Follow it blocks, writing as output arrives, until the server ends
// the stream (the container stopped) or ctx is done.
func (c *Client) Logs(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error {
	q := url.Values{}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.TailLines >= 0 {
		q.Set("tailLines", strconv.Itoa(opts.TailLines))
	}
	path := "/containerLogs/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container)
	resp, err := c.get(ctx, path, q)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read logs: %w", err)
	}
	return nil
}

// Healthz returns nil if the server reports itself healthy (GET /healthz).
func (c *Client) Healthz(ctx context.Context) error {
	resp, err := c.get(ctx, "/healthz", nil)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	return nil
}

// Events returns the node's recent pod events (GET /events), oldest first.
// A non-empty fieldSelector filters them on the server, e.g.
// PodEventSelector(namespace, name, uid) or
// "involvedObject.namespace=default,involvedObject.name=web".
func (c *Client) Events(ctx context.Context, fieldSelector string) (*v1.EventList, error) {
	var q url.Values
	if fieldSelector != "" {
		q = url.Values{"fieldSelector": {fieldSelector}}
	}
	resp, err := c.get(ctx, "/events", q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var list v1.EventList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode event list: %w", err)
	}
	return &list, nil
}

// Exec runs cmd in a running container and waits for it (POST /run/...),
// at most timeout (0: no limit; rounded up to whole seconds). A command that
// exits non-zero is a result with its ExitCode, not an error; an unknown pod
// or container is a *StatusError with Code 404.
func (c *Client) Exec(ctx context.Context, namespace, pod, container string, cmd []string, timeout time.Duration) (*ExecResult, error) {
	if len(cmd) == 0 {
		return nil, errors.New("exec: no command given")
	}
	q := url.Values{"cmd": cmd}
	if timeout > 0 {
		q.Set("timeout", strconv.FormatInt(int64((timeout+time.Second-1)/time.Second), 10))
	}
	path := "/run/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container)
	resp, err := c.do(ctx, http.MethodPost, path, q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var res ExecResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("decode exec result: %w", err)
	}
	return &res, nil
}

// get sends a GET request; a non-2xx answer becomes a *StatusError.
func (c *Client) get(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	return c.do(ctx, http.MethodGet, path, q)
}

// do sends a request without a body; a non-2xx answer becomes a
// *StatusError.
func (c *Client) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call skiff API: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(body))}
	}
	return resp, nil
}
