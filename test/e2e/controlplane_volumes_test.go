package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// volumeStatefulSetManifest is a StatefulSet whose pods each get a
// PersistentVolumeClaim of the default StorageClass from a
// volumeClaimTemplate, mounted at /data.
const volumeStatefulSetManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: pg
spec:
  serviceName: pg
  replicas: 2
  selector:
    matchLabels: {app: pg}
  template:
    metadata:
      labels: {app: pg}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      securityContext: {runAsUser: 1000}
      containers:
      - name: pg
        image: ` + busyboxImage + `
        command: ["sh", "-c", "[ -e /data/first ] || hostname > /data/first; exec sleep 3600"]
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
`

// staticVolumeManifest is a PersistentVolume made by hand on a host
// directory (%s), a claim of no class that names it, and a pod that reads
// the directory through the claim, read-only.
const staticVolumeManifest = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: manual
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: %s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: manual
spec:
  storageClassName: ""
  volumeName: manual
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 1Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: reader
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: reader
    image: ` + busyboxImage + `
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: site, mountPath: /site}
  volumes:
  - name: site
    persistentVolumeClaim: {claimName: manual, readOnly: true}
`

// TestControlPlanePersistentVolumes_Issue36: against `skiff agent
// --control-plane`, the default StorageClass local-path provisions a
// volume (a directory under <root-dir>/storage) for each claim of a
// StatefulSet's volumeClaimTemplates; what a pod writes there survives
// the pod, and the replacement pod gets the same claim; deleting a claim
// deletes its volume and the directory. A volume made by hand on a host
// directory binds to the claim that names it and mounts read-only.
func TestControlPlanePersistentVolumes_Issue36(t *testing.T) {
	_, kc := startControlPlane(t)
	storage := filepath.Join(filepath.Dir(kc), "storage")

	eventually(t, time.Minute, func() (bool, string) {
		out, _ := cpKubectlErr(kc, "", "get", "storageclass", "--no-headers")
		f := strings.Fields(out)
		return len(f) > 2 && f[0] == "local-path" && f[1] == "(default)" && f[2] == "skiff.io/local-path", "kubectl get storageclass: " + out
	})
	cpKubectl(t, kc, volumeStatefulSetManifest, "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = cpKubectlErr(kc, "", "delete", "statefulset/pg", "--wait=true", "--ignore-not-found")
		_, _ = cpKubectlErr(kc, "", "delete", "pvc", "-l", "app=pg", "--wait=false")
	})
	cpKubectl(t, kc, "", "rollout", "status", "statefulset/pg", "--timeout=3m")
	for _, claim := range []string{"data-pg-0", "data-pg-1"} {
		out := cpKubectl(t, kc, "", "get", "pvc", claim, "-o", "jsonpath={.status.phase} {.spec.storageClassName} {.spec.volumeName}")
		f := strings.Fields(out)
		if len(f) != 3 || f[0] != "Bound" || f[1] != "local-path" {
			t.Fatalf("pvc %s = %q, want Bound of local-path", claim, out)
		}
		path := cpKubectl(t, kc, "", "get", "pv", f[2], "-o", "jsonpath={.spec.hostPath.path}")
		if filepath.Dir(path) != storage {
			t.Errorf("pv %s of %s: hostPath %q, want a directory under %s", f[2], claim, path, storage)
		}
	}
	// Each pod wrote its name into its own volume, as user 1000.
	for _, pod := range []string{"pg-0", "pg-1"} {
		if out := cpKubectl(t, kc, "", "exec", pod, "--", "cat", "/data/first"); out != pod+"\n" {
			t.Errorf("/data/first in %s = %q", pod, out)
		}
	}
	// The data outlives the pod: pg-0's replacement finds it.
	cpKubectl(t, kc, "", "exec", "pg-0", "--", "sh", "-c", "echo kept > /data/msg")
	uid := cpKubectl(t, kc, "", "get", "pod", "pg-0", "-o", "jsonpath={.metadata.uid}")
	cpKubectl(t, kc, "", "delete", "pod", "pg-0", "--wait=true")
	eventually(t, 3*time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "exec", "pg-0", "--", "cat", "/data/msg")
		now, _ := cpKubectlErr(kc, "", "get", "pod", "pg-0", "-o", "jsonpath={.metadata.uid}")
		return err == nil && out == "kept\n" && now != uid, fmt.Sprintf("/data/msg in the new pg-0: %v %q", err, out)
	})

	// Deleting the StatefulSet keeps the claims; deleting a claim deletes
	// its volume and directory (reclaim policy Delete).
	cpKubectl(t, kc, "", "delete", "statefulset/pg", "--wait=true")
	pv := cpKubectl(t, kc, "", "get", "pvc", "data-pg-1", "-o", "jsonpath={.spec.volumeName}")
	path := cpKubectl(t, kc, "", "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}")
	cpKubectl(t, kc, "", "delete", "pvc", "data-pg-1", "--wait=true", "--timeout=2m")
	eventually(t, 2*time.Minute, func() (bool, string) {
		out, err := cpKubectlErr(kc, "", "get", "pv", pv, "--ignore-not-found")
		_, statErr := os.Stat(path)
		return err == nil && out == "" && errors.Is(statErr, fs.ErrNotExist), fmt.Sprintf("pv %s: %q %v; directory %s: %v", pv, out, err, path, statErr)
	})

	// A volume made by hand.
	site := t.TempDir()
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cpKubectl(t, kc, fmt.Sprintf(staticVolumeManifest, site), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = cpKubectlErr(kc, "", "delete", "pod/reader", "pvc/manual", "pv/manual", "--wait=false", "--ignore-not-found")
	})
	cpKubectl(t, kc, "", "wait", "pod/reader", "--for=condition=Ready", "--timeout=3m")
	if out := cpKubectl(t, kc, "", "exec", "reader", "--", "cat", "/site/index.html"); out != "hello\n" {
		t.Errorf("/site/index.html through the claim = %q", out)
	}
	if out, err := cpKubectlErr(kc, "", "exec", "reader", "--", "touch", "/site/x"); err == nil {
		t.Errorf("a readOnly claim's mount is writable: %q", out)
	}
}
