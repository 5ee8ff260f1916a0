package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// statefulSetManifest is a headless Service and a StatefulSet of busybox
// pods behind it, ready once /tmp/ready exists.
const statefulSetManifest = `apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  clusterIP: None
  selector: {app: db}
  ports:
  - {name: db, port: 5432}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: ` + busyboxImage + `
        command: ["sh", "-c", "touch /tmp/ready; exec sleep 3600"]
        readinessProbe:
          exec: {command: ["test", "-e", "/tmp/ready"]}
          periodSeconds: 1
`

// TestControlPlaneStatefulSets_Issue36: against `skiff agent
// --control-plane`, a StatefulSet behind a headless Service runs db-0 and
// db-1 with their stable names as hostnames (db-1 resolves db-0's name in
// the cluster DNS), scales to three, and rolls a
// new template out (kubectl rollout status); the headless Service's
// EndpointSlice names each pod; a PodDisruptionBudget of the three pods
// gets its status, and kubectl drain evicts them within it; RBAC objects
// are stored and listed.
func TestControlPlaneStatefulSets_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)

	cpKubectl(t, kc, statefulSetManifest, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "delete", "statefulset/db", "--wait=true", "--ignore-not-found") })
	cpKubectl(t, kc, "", "rollout", "status", "statefulset/db", "--timeout=3m")
	for _, pod := range []string{"db-0", "db-1"} {
		if out := cpKubectl(t, kc, "", "exec", pod, "--", "hostname"); out != pod+"\n" {
			t.Errorf("hostname of %s = %q", pod, out)
		}
	}
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "endpointslices", "-l", "kubernetes.io/service-name=db",
			"-o", "jsonpath={.items[0].endpoints[*].hostname}")
		return out == "db-0 db-1" || out == "db-1 db-0", "headless EndpointSlice hostnames: " + out
	})
	// The stable network identity: db-1 finds db-0 by its name in the
	// cluster DNS.
	db0 := cpKubectl(t, kc, "", "get", "pod", "db-0", "-o", "jsonpath={.status.podIP}")
	eventually(t, time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "exec", "db-1", "--", "nslookup", "db-0.db.default.svc.cluster.local")
		return err == nil && strings.Contains(out, "Address: "+db0), fmt.Sprintf("nslookup db-0.db in db-1: %v\n%s\nwant %s", err, out, db0)
	})

	cpKubectl(t, kc, "", "scale", "statefulset/db", "--replicas=3")
	cpKubectl(t, kc, "", "rollout", "status", "statefulset/db", "--timeout=3m")
	cpKubectl(t, kc, "", "set", "env", "statefulset/db", "VERSION=2")
	cpKubectl(t, kc, "", "rollout", "status", "statefulset/db", "--timeout=3m")
	if out := cpKubectl(t, kc, "", "exec", "db-0", "--", "sh", "-c", "echo $VERSION"); out != "2\n" {
		t.Errorf("db-0 after the rollout: VERSION=%q, want 2", out)
	}
	if out := cpKubectl(t, kc, "", "get", "statefulset", "db", "--no-headers"); !strings.HasPrefix(strings.Join(strings.Fields(out), " "), "db 3/3") {
		t.Errorf("kubectl get statefulset db = %q, want db 3/3", out)
	}
	// A budget of the three: the disruption controller allows two
	// disruptions with minAvailable 1.
	cpKubectl(t, kc, "", "create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=1")
	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "pdb", "db")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		want := "db 1 N/A 2"
		return len(lines) == 2 && strings.Fields(lines[0])[0] == "NAME" && strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), want),
			"kubectl get pdb db:\n" + out + "\nwant " + want
	})
	// kubectl drain evicts the three through pods/eviction: two at once,
	// the third only once a replacement is ready again (429 meanwhile).
	// The StatefulSet's replacements land on the cordoned node all the
	// same: the control plane places every pod on its one node.
	node := cpKubectl(t, kc, "", "get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
	t.Cleanup(func() { _, _ = cpKubectlErr(kc, "", "uncordon", node) })
	out, err := cpKubectlErr(kc, "", "drain", node, "--pod-selector=app=db", "--timeout=3m")
	for _, want := range []string{"evicting pod default/db-0", "evicting pod default/db-2",
		"Cannot evict pod as it would violate the pod's disruption budget.", "node/" + node + " drained"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("kubectl drain %s: %v\n%s\nwant %q", node, err, out, want)
			break
		}
	}
	cpKubectl(t, kc, "", "uncordon", node)
	cpKubectl(t, kc, "", "rollout", "status", "statefulset/db", "--timeout=3m")

	cpKubectl(t, kc, "", "create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
	cpKubectl(t, kc, "", "create", "rolebinding", "read-pods", "--role=pod-reader", "--serviceaccount=default:default")
	if out := cpKubectl(t, kc, "", "get", "rolebinding", "read-pods", "-o", "jsonpath={.roleRef.name} {.subjects[0].name}"); out != "pod-reader default" {
		t.Errorf("rolebinding read-pods = %q", out)
	}
}
