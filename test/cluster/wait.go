package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollInterval is how often Start checks a condition.
const pollInterval = 100 * time.Millisecond

// waitFor polls cond until it returns nil. It fails at once if p exits, and
// when ctx ends, with cond's last error and the end of p's log.
func (c *Cluster) waitFor(ctx context.Context, p *process, what string, cond func(context.Context) error) error {
	began := time.Now()
	for {
		err := cond(ctx)
		if err == nil {
			c.logf("cluster: %s after %v", what, time.Since(began).Round(time.Millisecond))
			return nil
		}
		if done, exitErr := p.exited(); done {
			return p.exitError(exitErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %w); the end of %s:\n%s",
				what, ctx.Err(), err, p.log, p.logTail(20))
		case <-time.After(pollInterval):
		}
	}
}

// httpOK is a condition: a GET of url with hc answers 200.
func httpOK(hc *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}

// etcdHealthy is a condition: etcd answers /health with 200.
func etcdHealthy(url string) func(context.Context) error {
	return httpOK(http.DefaultClient, url+"/health")
}

// readyz is a condition: the API server answers /readyz with 200 to the
// admin.
func (c *Cluster) readyz(ctx context.Context) error {
	return httpOK(c.http, c.Server()+"/readyz")(ctx)
}

// defaultNamespace is a condition: the default namespace exists.
func (c *Cluster) defaultNamespace(ctx context.Context) error {
	_, err := c.client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	return err
}

// defaultServiceAccount is a condition: the default namespace's default
// service account exists, so the ServiceAccount admission plugin admits
// pods there.
func (c *Cluster) defaultServiceAccount(ctx context.Context) error {
	_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	return err
}
