package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// metricsServerPort is the Service port of metrics-server, as upstream's
// manifests have it.
const metricsServerPort = 443

// StartMetricsServer runs metrics-server (bin, `make metricsserver`) beside
// the control plane and registers it with the aggregation layer, so that
// the metrics.k8s.io API (kubectl top) works: a Service without selector
// in kube-system, its Endpoints at hostIP (a non-loopback address of this
// machine, which Endpoints require; metrics-server listens on all
// addresses), and the APIService v1beta1.metrics.k8s.io. metrics-server
// scrapes each node's kubelet API (/metrics/resource on the node's
// InternalIP, port 10250) every 15 s with the admin's client certificate,
// not verifying the kubelets' serving certificates. It returns once the
// APIService is Available; Stop stops it with the rest.
func (c *Cluster) StartMetricsServer(ctx context.Context, bin, hostIP string) error {
	ip := net.ParseIP(hostIP)
	if ip == nil || ip.IsLoopback() {
		return fmt.Errorf("cluster: metrics-server: host IP %q: want a non-loopback address of this machine", hostIP)
	}
	ports, err := freePorts(1)
	if err != nil {
		return fmt.Errorf("cluster: metrics-server: %w", err)
	}
	admin := c.Kubeconfig("admin")
	p := newProcess(c.cfg.Dir, "metrics-server", bin,
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(c.cfg.Dir, "metrics-server-certs"),
		"--kubeconfig="+admin,
		"--authentication-kubeconfig="+admin,
		"--authorization-kubeconfig="+admin,
		"--kubelet-insecure-tls",
		"--kubelet-preferred-address-types=InternalIP",
		"--metric-resolution=15s",
		"--kubelet-request-timeout=5s",
	)
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return fmt.Errorf("cluster: metrics-server: the cluster is stopped")
	}
	if err := p.start(); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("cluster: %w", err)
	}
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	manifest := fmt.Sprintf(metricsServerManifest, metricsServerPort, ports[0], hostIP, ports[0], metricsServerPort)
	if out, err := c.kubectl(ctx, manifest, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("cluster: metrics-server: kubectl apply: %w\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return c.waitFor(ctx, p, "metrics.k8s.io Available", func(ctx context.Context) error {
		out, err := c.kubectl(ctx, "", "get", "apiservice", "v1beta1.metrics.k8s.io",
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if err != nil || strings.TrimSpace(out) != "True" {
			return fmt.Errorf("APIService v1beta1.metrics.k8s.io not Available: %q (%w)", out, err)
		}
		return nil
	})
}

// metricsServerManifest registers metrics-server (format: the Service's
// port, metrics-server's port, the host IP, metrics-server's port, the
// Service's port).
const metricsServerManifest = `apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{name: https, port: %d, targetPort: %d, protocol: TCP}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets:
- addresses: [{ip: %q}]
  ports: [{name: https, port: %d, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: %d}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`

// kubectl runs the control plane's kubectl as the admin with stdin and
// returns its combined output. Blocking; at most a minute.
func (c *Cluster) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.cfg.Bin, append([]string{"kubectl", "--kubeconfig", c.Kubeconfig("admin")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECTL_COMMAND_HEADERS=false")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
