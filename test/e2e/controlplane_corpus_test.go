package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corpusBundles are the application bundles of testdata/corpus: each
// installs into a namespace of its name, as a user would against k3s
// (kubectl create namespace; kubectl apply -f), and is ready once its
// waits (kubectl arguments) return. The images are the e2e suite's own
// (there is no registry here): BUSYBOX and TESTSERVER in the files.
var corpusBundles = []struct {
	name  string
	waits [][]string
}{
	{"web", [][]string{{"rollout", "status", "deployment/web"}}},
	{"db", [][]string{{"rollout", "status", "statefulset/db"}}},
	{"logging", [][]string{{"rollout", "status", "daemonset/shipper"}}},
	{"backup", nil}, // its first scheduled run is checked below
	{"batch", [][]string{{"wait", "--for=condition=complete", "job/render"}}},
	{"cache", [][]string{{"rollout", "status", "deployment/cache"}}},
	{"config", [][]string{{"rollout", "status", "deployment/app"}}},
	{"sidecar", [][]string{{"rollout", "status", "deployment/worker"}}},
	{"shop", [][]string{{"rollout", "status", "deployment/backend"}, {"rollout", "status", "deployment/frontend"}}},
	{"widgets", [][]string{{"wait", "--for=condition=Established", "crd/widgets.corpus.example.com"}, {"rollout", "status", "deployment/operator"}}},
}

// nsKubectl is cpKubectl in namespace ns.
func nsKubectl(t *testing.T, kc, ns, stdin string, args ...string) string {
	t.Helper()
	return cpKubectl(t, kc, stdin, append([]string{"-n", ns}, args...)...)
}

// TestControlPlaneCorpus_Issue36: against `skiff agent --control-plane`,
// ten application bundles of the usual shapes install together and become
// ready (a web site on a NodePort, a database StatefulSet on a claim, a
// DaemonSet log shipper with RBAC, a backup CronJob, an Indexed Job, a
// cache with a disruption budget, ConfigMap and Secret configuration, a
// native sidecar, two tiers talking by DNS name, an operator's CRD), and
// each then does what it is for, checked from a pod, from the node, or in
// the objects' status.
func TestControlPlaneCorpus_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)
	t.Cleanup(func() {
		args := []string{"delete", "namespace", "--wait=true", "--timeout=2m", "--ignore-not-found"}
		for _, b := range corpusBundles {
			args = append(args, b.name)
		}
		if out, err := cpKubectlErr(kc, "", args...); err != nil {
			t.Logf("kubectl delete namespace: %v\n%s", err, out)
		}
		_, _ = cpKubectlErr(kc, "", "delete", "pod/client", "--wait=true", "--ignore-not-found")
	})
	for _, b := range corpusBundles {
		raw, err := os.ReadFile(filepath.Join("testdata", "corpus", b.name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		manifest := strings.NewReplacer("BUSYBOX", busyboxImage, "TESTSERVER", testserverImage).Replace(string(raw))
		cpKubectl(t, kc, "", "create", "namespace", b.name)
		nsKubectl(t, kc, b.name, manifest, "apply", "-f", "-")
	}
	cpKubectl(t, kc, clientManifest, "apply", "-f", "-")
	for _, b := range corpusBundles {
		for _, w := range b.waits {
			nsKubectl(t, kc, b.name, "", append(w, "--timeout=3m")...)
		}
	}
	cpKubectl(t, kc, "", "wait", "pod/client", "--for=condition=Ready", "--timeout=3m")
	nodeIP := strings.Fields(cpKubectl(t, kc, "", "get", "node", "-o", "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}"))[0]

	// The web site by name from a pod of another namespace, and on its
	// node port from the node; the shop's frontend calls its backend by
	// name.
	fromPod := func(url, want string) {
		t.Helper()
		eventually(t, time.Minute, func() (bool, string) {
			out, err := cpKubectlErr(kc, "", "exec", "client", "--", "wget", "-qO-", url)
			return err == nil && out == want, fmt.Sprintf("wget %s from a pod: %v %q, want %q", url, err, out, want)
		})
	}
	fromNode := func(ns, svc, path, want string) {
		t.Helper()
		port := nsKubectl(t, kc, ns, "", "get", "service", svc, "-o", "jsonpath={.spec.ports[0].nodePort}")
		url := "http://" + nodeIP + ":" + port + path
		eventually(t, time.Minute, func() (bool, string) {
			body, err := httpGetBody(url)
			return err == nil && body == want, fmt.Sprintf("GET %s: %v %q, want %q", url, err, body, want)
		})
	}
	fromPod("http://web.web.svc.cluster.local/", "hello from web\n")
	fromNode("web", "web", "/", "hello from web\n")
	fromNode("shop", "frontend", "/cgi-bin/api", "backend ok\n")
	// The database's table is on its claim, served under its stable name.
	fromPod("http://db-0.db.db.svc.cluster.local:5432/table", "row1\n")
	if out := nsKubectl(t, kc, "db", "", "get", "pvc", "data-db-0", "-o", "jsonpath={.status.phase}"); out != "Bound" {
		t.Errorf("db's claim: %q, want Bound", out)
	}
	// Configuration as environment and as files.
	if out := nsKubectl(t, kc, "config", "", "exec", "deployment/app", "--", "sh", "-c", "echo $LOG_LEVEL $DB_PASSWORD; cat /etc/app/password"); out != "info s3cret\ns3cret" {
		t.Errorf("config app sees %q", out)
	}
	// The sidecar ships the worker's log.
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "-n", "sidecar", "logs", "deployment/worker", "-c", "ship", "--tail=5")
		return strings.Contains(out, "tick"), "sidecar log: " + out
	})
	// The cache's budget allows one disruption of its two replicas.
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "-n", "cache", "get", "pdb", "cache", "-o", "jsonpath={.status.disruptionsAllowed}")
		return out == "1", "cache pdb disruptionsAllowed: " + out
	})
	// The operator's custom resource, defaulted by its schema.
	nsKubectl(t, kc, "widgets", "apiVersion: corpus.example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {}\n", "apply", "-f", "-")
	if out := nsKubectl(t, kc, "widgets", "", "get", "widget", "w1", "-o", "jsonpath={.spec.size}"); out != "1" {
		t.Errorf("widget w1 size = %q, want the default 1", out)
	}
	// The backup's first scheduled run (on the minute) succeeds.
	eventually(t, 3*time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "-n", "backup", "get", "jobs", "-o", "jsonpath={.items[*].status.succeeded}")
		return strings.Contains(out, "1"), "backup jobs succeeded: " + out
	})
}
