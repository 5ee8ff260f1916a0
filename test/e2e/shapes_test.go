package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// shapesDir holds the real-world pod shapes of issue 14.
var shapesDir = filepath.Join("..", "..", "examples", "shapes")

// shapesHostDir is where the shapes' hostPath volumes live on the host.
const shapesHostDir = "/tmp/skiff-shapes"

// TestRealWorldShapes_G1_G13_G15 runs every pod of examples/shapes at once,
// unchanged, and checks each one from inside its containers: the shapes
// people write for a node (issue 14), with volumes of every kind, the
// container environment and security contexts.
func TestRealWorldShapes_G1_G13_G15(t *testing.T) {
	e := NewEnv(t)
	if err := os.RemoveAll(shapesHostDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(shapesHostDir) })
	e.StartAgent(t, AgentOptions{})
	files, err := filepath.Glob(filepath.Join(shapesDir, "*.yaml"))
	if err != nil || len(files) != 13 {
		t.Fatalf("shapes: %v (%v), want 13 files", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		e.WriteManifest(t, filepath.Base(f), string(data))
	}
	for _, name := range []string{"etcd", "web", "cache", "node-agent", "log-sidecar", "downward",
		"hardened", "shared-pid", "secrets", "hosts", "netadmin", "envfrom"} {
		e.WaitForPod(t, PodName(name), runningAndReady, podStartTimeout)
	}
	batch := e.WaitForPod(t, PodName("batch"), phaseIs(v1.PodSucceeded), podStartTimeout)
	if batch.Status.Phase != v1.PodSucceeded {
		t.Errorf("batch phase %s", batch.Status.Phase)
	}
	checks := []struct {
		ns, pod, container string
		cmd                []string
		want               []string // substrings of the output
	}{
		// hostPath DirectoryOrCreate made the data and certs directories.
		{"kube-system", "etcd", "etcd", []string{"sh", "-c", "test -d /var/lib/etcd && test -d /etc/kubernetes/pki/etcd && echo dirs"}, []string{"dirs"}},
		// a configMap volume with items, and a subPath file of one.
		{namespace, "web", "httpd", []string{"wget", "-qO-", "http://127.0.0.1:8080/index.html"}, []string{"hello from skiff"}},
		{namespace, "web", "httpd", []string{"cat", "/etc/httpd.conf"}, []string{"H:/www"}},
		// a Memory emptyDir is a tmpfs of sizeLimit.
		{namespace, "cache", "cache", []string{"sh", "-c", "grep ' /data ' /proc/mounts; df -k /data"}, []string{"tmpfs", "32768"}},
		// host PID namespace, an unprivileged user, a read-only root.
		{"monitoring", "node-agent", "agent", []string{"sh", "-c", "id -u; cat /host/proc/loadavg >/dev/null && echo proc; touch /x 2>&1 || echo rofs"}, []string{"65534", "proc", "rofs"}},
		// a native sidecar reads what the app writes to the shared emptyDir.
		{namespace, "log-sidecar", "shipper", []string{"sh", "-c", "grep -c tick /logs/app.log"}, nil},
		// the downward API as a volume (G.7) and as env (G.6, G.8).
		{namespace, "downward", "app", []string{"sh", "-c", "cat /etc/podinfo/labels /etc/podinfo/cpu_limit; echo; env"},
			[]string{`app="downward"`, `tier="demo"`, "250", "MY_NAMESPACE=default", "MY_MEM_LIMIT_MI=64", "MY_CPU_REQUEST_M=25", "MY_NODE=" + nodeName}},
		// the hardened pod's IDs, groups, capabilities and protections.
		{namespace, "hardened", "app", []string{"sh", "-c", "id; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; cat /tmp/ok; touch /x 2>&1 || echo rofs"},
			[]string{"uid=1000", "gid=3000", "2000", "4000", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "ok", "rofs"}},
		// PID 1 of a shared process namespace is the pause process.
		{namespace, "shared-pid", "helper", []string{"sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '; echo; ps"}, []string{"pause", "sleep 86400"}},
		// a Secret as env, as a 0400 volume, and projected with a ConfigMap.
		{namespace, "secrets", "app", []string{"sh", "-c", "echo $DB_PASSWORD; cat /etc/creds/password; echo; stat -L -c %a /etc/creds/password; cat /etc/app/db/username /etc/app/db/host"},
			[]string{"s3cr3t", "400", "app", "db.example.internal"}},
		// hostAliases in the managed /etc/hosts, DNS options, the hostname.
		{namespace, "hosts", "app", []string{"sh", "-c", "cat /etc/hosts /etc/resolv.conf; hostname"},
			[]string{"10.1.2.3\tlegacy.example.internal\tlegacy", "nameserver 10.96.0.10", "ndots:2", "api"}},
		// a safe sysctl set in the pod.
		{namespace, "netadmin", "app", []string{"cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start"}, []string{"80"}},
		// envFrom with a prefix, $(VAR) in args, subPathExpr on a hostPath.
		{namespace, "envfrom", "app", []string{"cat", "/logs/start"}, []string{"level=debug listen=:9000"}},
	}
	for _, c := range checks {
		id := shapeContainer(t, e, c.ns, c.pod, c.container)
		out := e.Exec(t, id, c.cmd...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s/%s %s: %q\nwant it to contain %q", c.ns, c.pod, c.container, out, w)
			}
		}
	}
	// The subPathExpr directory and its file are on the host.
	if data, err := os.ReadFile(filepath.Join(shapesHostDir, "logs", PodName("envfrom"), "start")); err != nil || !strings.Contains(string(data), "level=debug") {
		t.Errorf("host file of envfrom's subPathExpr: %q, %v", data, err)
	}
	if out, err := e.Skiff(t, "logs", PodName("batch"), "-c", "job"); err != nil || !strings.Contains(out, "done: 5050") {
		t.Errorf("batch log %q, %v", out, err)
	}
}

// shapeContainer returns the ID of the newest container called container
// of pod (a shape name) in namespace ns.
func shapeContainer(t *testing.T, e *Env, ns, pod, container string) string {
	t.Helper()
	cs := e.Containers(t, map[string]string{"io.kubernetes.pod.name": PodName(pod),
		"io.kubernetes.pod.namespace": ns, "io.kubernetes.container.name": container})
	if len(cs) == 0 {
		t.Fatalf("no container %q of pod %s/%s", container, ns, PodName(pod))
	}
	return cs[len(cs)-1].ID
}
