package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/skiffnode/skiff/internal/k8sversion"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/httpget"
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

// hookUserAgent is the kubelet's User-Agent of httpGet hooks.
const hookUserAgent = "kube-lifecycle/" + k8sversion.MajorMinor

// runHTTP sends the hook's GET request, built as a probe's
// (httpget.NewRequest), and reads at most 10 KiB of the answer; any answer
// is a success, as in the kubelet.
func (r *hookRunner) runHTTP(ctx context.Context, c *v1.Container, podIP string, g *v1.HTTPGetAction) error {
	req, err := httpget.NewRequest(g, c, podIP, hookUserAgent)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	return resp.Body.Close()
}
