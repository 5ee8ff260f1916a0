package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// helm runs SKIFF_HELM (make helm) with args against kubeconfig in the
// test namespace, its own state under dir, and fails the test on an
// error; it returns the output.
func helm(t *testing.T, kubeconfig, dir string, args ...string) string {
	t.Helper()
	out, err := helmErr(kubeconfig, dir, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func helmErr(kubeconfig, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv("SKIFF_HELM"), append(args, "--kubeconfig", kubeconfig, "--namespace", namespace)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestControlPlaneHelmChart_Issue36: against `skiff agent --control-plane`,
// Helm's own CLI installs a chart with a CRD (its crds/ directory), a
// ServiceAccount, a Role and RoleBinding, a ClusterRole, a ConfigMap, a
// Deployment behind a Service and a custom resource of the CRD, waiting
// until they are ready (helm install --wait); the custom resource has the
// CRD's default, the Service answers with the ConfigMap's page; helm
// upgrade makes revision 2 and helm uninstall removes the release's
// objects and keeps the CRD, as Helm does.
func TestControlPlaneHelmChart_Issue36(t *testing.T) {
	if os.Getenv("SKIFF_HELM") == "" {
		t.Skip("SKIFF_HELM is not set: build Helm with `make helm` (make e2e does)")
	}
	_, kc := startControlPlane(t)
	dir := t.TempDir()
	chart, err := filepath.Abs(filepath.Join("testdata", "charts", "guestbook"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = helmErr(kc, dir, "uninstall", "guest", "--ignore-not-found")
		_, _ = cpKubectlErr(kc, "", "delete", "crd/guestbooks.example.com", "--ignore-not-found")
	})

	out := helm(t, kc, dir, "install", "guest", chart, "--set", "image="+busyboxImage, "--wait", "--timeout", "3m")
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm install:\n%s\nwant STATUS: deployed", out)
	}
	if out := cpKubectl(t, kc, "", "get", "guestbook", "guest", "-o", "jsonpath={.spec.greeting} {.spec.replicas}"); out != "hello 1" {
		t.Errorf("guestbook guest = %q, want the chart's greeting and the CRD's default replicas (hello 1)", out)
	}
	for _, obj := range []string{"serviceaccount/guest", "role/guest-reader", "rolebinding/guest-reader", "clusterrole/guest-guestbooks", "configmap/guest"} {
		cpKubectl(t, kc, "", "get", obj)
	}
	if out := cpKubectl(t, kc, "", "get", "deployment", "guest", "-o", "jsonpath={.status.readyReplicas}"); out != "1" {
		t.Errorf("deployment guest ready replicas = %q after helm install --wait, want 1", out)
	}
	ip := cpKubectl(t, kc, "", "get", "service", "guest", "-o", "jsonpath={.spec.clusterIP}")
	// From the node: the service proxy carries cluster IPs there too.
	hc := &http.Client{Timeout: 2 * time.Second}
	eventually(t, time.Minute, func() (bool, string) {
		resp, err := hc.Get("http://" + ip + "/index.html")
		if err != nil {
			return false, "GET the guest Service's page from the node: " + err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && string(body) == "hello", fmt.Sprintf("GET the guest Service's page from the node: %s %q", resp.Status, body)
	})

	helm(t, kc, dir, "upgrade", "guest", chart, "--set", "image="+busyboxImage, "--set", "greeting=bonjour", "--wait", "--timeout", "3m")
	if out := cpKubectl(t, kc, "", "get", "guestbook", "guest", "-o", "jsonpath={.spec.greeting}"); out != "bonjour" {
		t.Errorf("guestbook guest's greeting after helm upgrade = %q, want bonjour", out)
	}
	if out := helm(t, kc, dir, "list", "--short"); !slices.Contains(strings.Split(out, "\n"), "guest") {
		t.Errorf("helm list --short = %q, want the release guest", out)
	}
	if out := helm(t, kc, dir, "history", "guest", "--max", "5"); !strings.Contains(out, "Upgrade complete") {
		t.Errorf("helm history guest:\n%s\nwant an upgrade", out)
	}

	helm(t, kc, dir, "uninstall", "guest", "--wait", "--timeout", "3m")
	for _, obj := range []string{"deployment/guest", "service/guest", "configmap/guest", "role/guest-reader", "clusterrole/guest-guestbooks", "guestbook/guest"} {
		if out, err := cpKubectlErr(kc, "", "get", obj); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("kubectl get %s after helm uninstall: %v\n%s\nwant NotFound", obj, err, out)
		}
	}
	cpKubectl(t, kc, "", "get", "crd", "guestbooks.example.com")
}
