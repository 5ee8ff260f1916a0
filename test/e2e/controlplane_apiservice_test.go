package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestControlPlaneKubernetesService_Issue36: against `skiff agent
// --control-plane`, default/kubernetes is kube-apiserver's Service (the
// first address of 10.96.0.0/12, port 443 "https") with an EndpointSlice
// and Endpoints at the node's address and the API's port; the node
// reaches the API at the cluster IP with the admin's credentials, the
// serving certificate naming that IP, and a pod reaches it too
// (anonymous: 401; with the token the ServiceAccount plugin mounts beside
// ca.crt and the namespace: the version), as in-cluster clients do.
func TestControlPlaneKubernetesService_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "delete", "pod/client", "--wait=true", "--ignore-not-found") })

	if out := cpKubectl(t, kc, "", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port}"); out != "10.96.0.1 https 443" {
		t.Errorf("Service kubernetes: %q, want 10.96.0.1 https 443", out)
	}
	nodeIP := strings.Fields(cpKubectl(t, kc, "", "get", "node", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}"))[0]
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	port := cfg.Host[strings.LastIndex(cfg.Host, ":")+1:]
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[0].addresses[0]}:{.ports[0].port}")
		// Endpoints come with upstream's deprecation warning first.
		eps, _ := cpKubectlErr(kc, "", "get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}")
		return out == nodeIP+":"+port && strings.HasSuffix(eps, "\n"+nodeIP+":"+port),
			"EndpointSlice kubernetes: " + out + ", Endpoints: " + eps + "; want " + nodeIP + ":" + port
	})

	cfg.Host = "https://10.96.0.1:443"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
		return err == nil, "GET https://10.96.0.1/version from the node: " + string(v) + " " + errString(err)
	})

	cpKubectl(t, kc, inClusterManifest, "apply", "-f", "-")
	cpKubectl(t, kc, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=2m")
	// The ServiceAccount plugin's volume: the namespace, the CA, a token.
	sa := "/var/run/secrets/kubernetes.io/serviceaccount"
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "cat", sa+"/namespace"); out != "default" {
		t.Errorf("%s/namespace = %q, want default", sa, out)
	}
	if out := cpKubectl(t, kc, "", "exec", "client", "--", "head", "-1", sa+"/ca.crt"); out != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("%s/ca.crt starts %q", sa, out)
	}
	out, _ := cpKubectlErr(kc, "", "exec", "client", "--", "wget", "-qO-", "--no-check-certificate", "https://10.96.0.1/version")
	if !strings.Contains(out, "401") {
		t.Errorf("GET https://10.96.0.1/version from a pod, anonymous: %q, want 401 Unauthorized", out)
	}
	// With its token, as an in-cluster client (busybox's wget cannot
	// verify with ca.crt; the node's request above did).
	out, _ = cpKubectlErr(kc, "", "exec", "client", "--", "sh", "-c",
		`wget -qO- --no-check-certificate --header "Authorization: Bearer $(cat `+sa+`/token)" https://10.96.0.1/version`)
	if !strings.Contains(out, `"gitVersion"`) {
		t.Errorf("GET https://10.96.0.1/version from a pod with its service account token: %q, want the version", out)
	}
}

// inClusterManifest is a pod that keeps its service account token.
const inClusterManifest = `apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: ` + busyboxImage + `
    command: ["sleep", "3600"]
`

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
