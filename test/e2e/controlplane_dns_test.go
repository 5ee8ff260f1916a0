package e2e

import (
	"strings"
	"testing"
	"time"
)

// dnsServicesManifest: web with a named port and web-headless, both of
// the app=web pods of webManifest.
const dnsServicesManifest = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: web-headless
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {name: http, port: 8080}
`

// TestControlPlaneDNS_Issue36: against `skiff agent --control-plane`, the
// cluster DNS is the kube-system/kube-dns Service at 10.96.0.10, whose
// EndpointSlice is the server on the node's address; a ClusterFirst pod
// gets it in its resolv.conf and reaches a Service by its short name;
// <svc>.<ns>.svc.cluster.local is the cluster IP, a headless Service's
// name its ready pod, _http._tcp.<svc> the named port (SRV), a pod's
// dashed address its address, and a name that does not exist NXDOMAIN.
func TestControlPlaneDNS_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)
	cpKubectl(t, kc, webManifest+"---\n"+dnsServicesManifest, "apply", "-f", "-")
	cpKubectl(t, kc, clientManifest, "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = cpKubectlErr(kc, "", "delete", "deployment/web", "pod/client", "--wait=true", "--ignore-not-found")
	})

	nodeIPs := cpKubectl(t, kc, "", "get", "node", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}")
	nodeIP := strings.Fields(nodeIPs)[0]
	eventually(t, time.Minute, func() (bool, string) {
		svc, _ := cpKubectlErr(kc, "", "get", "service", "-n", "kube-system", "kube-dns", "-o",
			"jsonpath={.spec.clusterIP} {.spec.ports[*].name} {.spec.ports[*].port}")
		slice, _ := cpKubectlErr(kc, "", "get", "endpointslices", "-n", "kube-system", "-l", "kubernetes.io/service-name=kube-dns",
			"-o", "jsonpath={.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}")
		return svc == "10.96.0.10 dns dns-tcp 53 53" && slice == nodeIP+":10053",
			"kube-dns Service " + svc + ", EndpointSlice " + slice + "; want 10.96.0.10 and " + nodeIP + ":10053"
	})

	cpKubectl(t, kc, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=2m")
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "cat", "/etc/resolv.conf"); !strings.Contains(out, "nameserver 10.96.0.10\n") ||
		!strings.Contains(out, "search default.svc.cluster.local svc.cluster.local cluster.local") {
		t.Errorf("client's resolv.conf:\n%s\nwant nameserver 10.96.0.10 and the cluster's search domains", out)
	}
	cpKubectl(t, kc, "", "rollout", "status", "deployment/web", "--timeout=2m")
	// By its short name, through the search domains.
	eventually(t, time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "exec", "client", "--", "wget", "-qO-", "http://web/healthz")
		return err == nil && out == "ok\n", "GET http://web/healthz from a pod: " + out
	})

	clusterIP := cpKubectl(t, kc, "", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	podIP := cpKubectl(t, kc, "", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.podIP}")
	dashed := strings.ReplaceAll(podIP, ".", "-")
	for _, tc := range []struct{ args, want string }{
		{"web.default.svc.cluster.local", "Address: " + clusterIP},
		{"web-headless.default.svc.cluster.local", "Address: " + podIP},
		{"-type=srv _http._tcp.web.default.svc.cluster.local", " 80 web.default.svc.cluster.local"},
		{"-type=srv _http._tcp.web-headless.default.svc.cluster.local", " 8080 " + dashed + ".web-headless.default.svc.cluster.local"},
		{dashed + ".default.pod.cluster.local", "Address: " + podIP},
	} {
		args := append([]string{"exec", "client", "--", "nslookup"}, strings.Fields(tc.args)...)
		if out, err := cpKubectlErr(kc, "", args...); err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("nslookup %s in a pod: %v\n%s\nwant %q", tc.args, err, out, tc.want)
		}
	}
	if out, err := cpKubectlErr(kc, "", "exec", "client", "--", "nslookup", "nosuch.default.svc.cluster.local"); err == nil || !strings.Contains(out, "NXDOMAIN") {
		t.Errorf("nslookup of a Service that does not exist: %v\n%s\nwant NXDOMAIN", err, out)
	}

	// README's "kubectl on one node", as written there.
	cpKubectl(t, kc, "", "create", "deployment", "readme", "--image", busyboxImage, "--port", "8080", "--", "httpd", "-f", "-p", "8080", "-h", "/etc")
	t.Cleanup(func() {
		_, _ = cpKubectlErr(kc, "", "delete", "deployment/readme", "--wait=true", "--ignore-not-found")
	})
	cpKubectl(t, kc, "", "expose", "deployment", "readme", "--port", "80", "--target-port", "8080")
	cpKubectl(t, kc, "", "rollout", "status", "deployment/readme", "--timeout=2m")
	eventually(t, time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "exec", "client", "--", "wget", "-qO-", "http://readme/hostname")
		return err == nil && strings.HasPrefix(out, "readme-"), "GET http://readme/hostname from a pod: " + out
	})
}
