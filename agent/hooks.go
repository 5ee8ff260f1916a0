package agent

import (
	"context"
	"crypto/tls"
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
	"k8s.io/apimachinery/pkg/util/intstr"
)

// errPostStartHook is the Waiting reason of a container whose postStart
// hook failed (the kubelet's ErrPostStartHook).
const reasonPostStartHookError = "PostStartHookError"

// hookRunner runs lifecycle handlers (C.1-C.14). Safe for concurrent use.
type hookRunner struct {
	exec   func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, error)
	client *http.Client
}

func newHookRunner(exec func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, error)) *hookRunner {
	// Like the kubelet's hook client: no keep-alives, certificates not
	// verified, redirects followed by net/http's default policy.
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet does for hooks
		DialContext:       (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
	}
	return &hookRunner{exec: exec, client: &http.Client{Transport: tr}}
}

// run runs handler h for container c of pod; it blocks until the handler
// finishes or ctx ends. On failure the message is the kubelet's.
func (r *hookRunner) run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := r.exec(ctx, containerID, h.Exec.Command, 0)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(pod), err, string(out)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, c, podIP, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podDesc(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := sleepHook(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podDesc(pod), err), err
		}
		return "", nil
	default:
		err := errors.New("invalid handler: no exec, httpGet or sleep")
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

func sleepHook(ctx context.Context, seconds int64) error {
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

func (r *hookRunner) runHTTP(ctx context.Context, c *v1.Container, podIP string, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	u, err = u.Parse(path)
	if err != nil {
		return fmt.Errorf("hook URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "kube-lifecycle/1.34")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	return resp.Body.Close()
}

// resolvePort turns a numeric or named port of c into a number.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %v in container %q", p.StrVal, c.Name)
}
