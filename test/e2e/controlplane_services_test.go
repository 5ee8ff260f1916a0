package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webManifest is a Deployment of one testserver pod, app=web, serving
// HTTP on 8080 and ready while its /ready says so; clientManifest is a
// busybox pod of enableServiceLinks that sleeps.
const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: ` + testserverImage + `
        command: ["/testserver", "--tcp-port=0", "--grpc-port=0"]
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
          failureThreshold: 1
`

const clientManifest = `apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: ` + busyboxImage + `
    command: ["sleep", "3600"]
`

// TestControlPlaneServices_Issue36: against `skiff agent --control-plane`,
// kubectl expose gives a Deployment a NodePort Service with a cluster IP
// from the service range (10.96.0.0/12) and a node port from 30000-32767;
// its EndpointSlice and Endpoints list the ready pod; a pod started after
// it gets the Service's variables (WEB_SERVICE_HOST, as from the kubelet);
// the cluster IP answers from the node and from a pod and the node port
// from the node's address, until the only endpoint turns unready;
// headless and ExternalName Services get no cluster IP; a taken node port
// is refused with upstream's message, and kubectl's columns are upstream's;
// sessionAffinity ClientIP keeps the node's requests on one pod.
func TestControlPlaneServices_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)

	cpKubectl(t, kc, webManifest, "apply", "-f", "-")
	// The agent's cleanup waits for the pods, which the Deployment would
	// recreate.
	t.Cleanup(func() {
		_, _ = cpKubectlErr(kc, "", "delete", "deployment/web", "pod/client", "--wait=true", "--ignore-not-found")
	})
	cpKubectl(t, kc, "", "expose", "deployment", "web", "--type=NodePort", "--port=80", "--target-port=8080")
	clusterIP := cpKubectl(t, kc, "", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	if ip, err := netip.ParseAddr(clusterIP); err != nil || !netip.MustParsePrefix("10.96.0.0/12").Contains(ip) {
		t.Errorf("cluster IP %q, want one in 10.96.0.0/12", clusterIP)
	}
	nodePort := cpKubectl(t, kc, "", "get", "service", "web", "-o", "jsonpath={.spec.ports[0].nodePort}")
	if p, err := strconv.Atoi(nodePort); err != nil || p < 30000 || p > 32767 {
		t.Errorf("node port %q, want one in 30000-32767", nodePort)
	}
	if out := cpKubectl(t, kc, "", "get", "service", "web"); !strings.HasPrefix(out, "NAME   TYPE       CLUSTER-IP") ||
		!strings.Contains(out, "80:"+nodePort+"/TCP") {
		t.Errorf("kubectl get service web =\n%s\nwant upstream's columns and 80:%s/TCP", out, nodePort)
	}

	cpKubectl(t, kc, "", "rollout", "status", "deployment/web", "--timeout=2m")
	podIP := cpKubectl(t, kc, "", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.podIP}")
	eventually(t, time.Minute, func() (bool, string) {
		slice, _ := cpKubectlErr(kc, "", "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
			"-o", "jsonpath={.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port} {.items[0].endpoints[0].conditions.ready}")
		eps, _ := cpKubectlErr(kc, "", "get", "endpoints", "web", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}")
		// Endpoints come with upstream's deprecation warning first.
		return slice == podIP+":8080 true" && strings.HasSuffix(eps, "\n"+podIP+":8080"),
			"EndpointSlice " + slice + ", Endpoints " + eps + "; want the pod " + podIP
	})

	cpKubectl(t, kc, clientManifest, "apply", "-f", "-")
	cpKubectl(t, kc, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=2m")
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "env"); !strings.Contains(out, "WEB_SERVICE_HOST="+clusterIP+"\n") ||
		!strings.Contains(out, "WEB_SERVICE_PORT=80\n") {
		t.Errorf("client's environment:\n%s\nwant WEB_SERVICE_HOST=%s and WEB_SERVICE_PORT=80", out, clusterIP)
	}

	// The service proxy: the cluster IP from the node and from a pod, the
	// node port from the node's address; an unready endpoint gets nothing.
	nodeIPs := cpKubectl(t, kc, "", "get", "node", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}")
	nodeIP := strings.Fields(nodeIPs)[0] // IPv4 first; Services here are IPv4
	for _, url := range []string{"http://" + clusterIP + "/healthz", "http://" + nodeIP + ":" + nodePort + "/healthz"} {
		eventually(t, time.Minute, func() (bool, string) {
			body, err := httpGetBody(url)
			return body == "ok\n", fmt.Sprintf("GET %s from the node: %q, %v", url, body, err)
		})
	}
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "wget", "-qO-", "http://"+clusterIP+"/healthz"); out != "ok\n" {
		t.Errorf("GET the cluster IP from a pod = %q, want ok", out)
	}
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "wget", "-qO-", "--post-data=", "http://"+clusterIP+"/ready?state=false"); out != "" {
		t.Logf("POST /ready?state=false: %q", out)
	}
	eventually(t, time.Minute, func() (bool, string) {
		ready, _ := cpKubectlErr(kc, "", "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
			"-o", "jsonpath={.items[0].endpoints[0].conditions.ready}")
		return ready == "false", "endpoint ready: " + ready
	})
	// The proxier syncs at most once a second.
	eventually(t, 30*time.Second, func() (bool, string) {
		body, err := httpGetBody("http://" + clusterIP + "/healthz")
		return err != nil, fmt.Sprintf("GET the cluster IP with no ready endpoint = %q, want it refused", body)
	})

	cpKubectl(t, kc, "", "create", "service", "clusterip", "db", "--clusterip=None")
	cpKubectl(t, kc, "", "create", "service", "externalname", "ext", "--external-name=example.com")
	if out := cpKubectl(t, kc, "", "get", "service", "db", "ext", "-o", "jsonpath={.items[*].spec.clusterIP}"); out != "None" {
		t.Errorf("cluster IPs of headless db and ExternalName ext = %q, want None and none", out)
	}
	out, err := cpKubectlErr(kc, "", "create", "service", "nodeport", "clash", "--tcp=80:8080", "--node-port="+nodePort)
	if want := "spec.ports[0].nodePort: Invalid value: " + nodePort + ": provided port is already allocated"; err == nil || !strings.Contains(out, want) {
		t.Errorf("a taken node port: %v\n%s\nwant %q", err, out, want)
	}
	cpKubectl(t, kc, "", "delete", "service", "web")
	cpKubectl(t, kc, "", "create", "service", "nodeport", "reuse", "--tcp=80:8080", "--node-port="+nodePort)

	// sessionAffinity ClientIP: every request from the node reaches the
	// same one of two pods (without it, 12 requests would all land on one
	// pod once in 2,048 runs).
	cpKubectl(t, kc, whoManifest, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "delete", "deployment/who", "--wait=true", "--ignore-not-found") })
	cpKubectl(t, kc, "", "rollout", "status", "deployment/who", "--timeout=2m")
	whoIP := cpKubectl(t, kc, "", "get", "service", "who", "-o", "jsonpath={.spec.clusterIP}")
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "endpointslices", "-l", "kubernetes.io/service-name=who",
			"-o", "jsonpath={.items[*].endpoints[*].conditions.ready}")
		return out == "true true", "who's endpoints ready: " + out
	})
	seen := map[string]int{}
	for range 12 {
		var body string
		eventually(t, 30*time.Second, func() (bool, string) {
			var err error
			body, err = httpGetBody("http://" + whoIP + "/")
			return err == nil, fmt.Sprintf("GET who: %v", err)
		})
		seen[body]++
	}
	if len(seen) != 1 {
		t.Errorf("with sessionAffinity ClientIP the node reached %v, want one pod", seen)
	}
}

// whoManifest is two busybox httpd pods that answer with their hostname,
// behind a Service of sessionAffinity ClientIP.
const whoManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: who
spec:
  replicas: 2
  selector:
    matchLabels: {app: who}
  template:
    metadata:
      labels: {app: who}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: httpd
        image: ` + busyboxImage + `
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: who
spec:
  selector: {app: who}
  sessionAffinity: ClientIP
  ports:
  - {port: 80, targetPort: 8080}
`

// httpGetBody is the body of GET url, on a new connection, with a short
// timeout.
func httpGetBody(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
