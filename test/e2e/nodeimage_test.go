package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// nodeImageTimeout bounds the node pod's start: the outer containerd
// imports the node image (~110 MB unpacked), then the inner skiff starts its
// own containerd, imports busybox and runs its pod.
const nodeImageTimeout = 3 * time.Minute

// TestNodeImage runs the node image (make node-image, SKIFF_NODE_IMAGE) as
// a privileged static pod and proves that the skiff inside it runs a pod of
// its own: a busybox pod from the manifest directory mounted into the node
// pod, seen Running through the inner skiff's API socket and writing its log
// on a hostPath. The inner skiff's root (containerd's overlayfs snapshots)
// is a hostPath on the host's disk: overlayfs cannot use a directory of the
// node container's own overlay root as its upper layer. Its pods get
// 10.89.0.0/16, as the node pod's own address comes from the outer 10.88/16.
func TestNodeImage(t *testing.T) {
	archive := os.Getenv("SKIFF_NODE_IMAGE")
	if archive == "" {
		t.Skip("SKIFF_NODE_IMAGE is not set (make e2e-node-image)")
	}
	e := NewEnv(t)
	e.SkipOnExternalRuntime(t, "skiff imports the node image archive from <root>/images into its managed containerd only")
	ref, err := archiveRef(archive)
	if err != nil {
		t.Fatal(err)
	}
	// The outer agent imports <root>/images at start; the archive goes
	// again after the test, its image stays in the outer containerd.
	imported := filepath.Join(e.s.Root, "images", "node-image.tar")
	if err := copyFile(archive, imported); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(imported) })

	inner := filepath.Join(e.Dir, "inner")
	in := struct{ manifests, root, logs string }{
		filepath.Join(inner, "manifests"), filepath.Join(inner, "root"), filepath.Join(inner, "logs"),
	}
	if err := copyFile(filepath.Join(e.s.Root, "images", "busybox.tar"), filepath.Join(in.root, "images", "busybox.tar")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{in.manifests, in.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	innerPod := `apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + busyboxImage + `
    command: [sh, -c, 'echo hello-from-the-inner-pod; exec sleep 3600']
`
	if err := os.WriteFile(filepath.Join(in.manifests, "hello.yaml"), []byte(innerPod), 0o644); err != nil {
		t.Fatal(err)
	}

	e.StartAgent(t, AgentOptions{})
	// Runs before NewEnv's cleanup removes the node pod and its log.
	t.Cleanup(func() {
		if t.Failed() {
			out, err := e.Skiff(t, "logs", PodName("node"))
			t.Logf("--- the inner skiff's log (%v) ---\n%s", err, out)
		}
	})
	e.WriteManifest(t, "node.yaml", nodePodManifest(ref, in.manifests, in.root, in.logs))
	start := time.Now()
	node := e.WaitForPod(t, PodName("node"), runningAndReady, nodeImageTimeout)
	t.Logf("node pod Running after %s", time.Since(start).Round(time.Millisecond))

	innerEnv := &Env{s: e.s, http: unixHTTPClient(filepath.Join(in.root, "skiff.sock"))}
	p := innerEnv.WaitForPod(t, "hello-inner", runningAndReady, nodeImageTimeout)
	t.Logf("inner pod Running after %s, IP %s", time.Since(start).Round(time.Millisecond), p.Status.PodIP)
	if !strings.HasPrefix(p.Status.PodIP, "10.89.") {
		t.Errorf("inner pod IP %q, want one from the inner skiff's 10.89.0.0/16", p.Status.PodIP)
	}
	// The inner skiff runs the image's own runtime (/usr/lib/skiff, make
	// runtime), which it names in its log.
	if out, err := e.Skiff(t, "logs", PodName("node")); err != nil || !strings.Contains(out, "containerd=/usr/lib/skiff/containerd ") {
		t.Errorf("the inner skiff does not log its runtime as /usr/lib/skiff/containerd (%v):\n%s", err, out)
	}
	// exec through the inner skiff (its API socket on the hostPath, the
	// inner containerd's streaming server in the node pod's network); on
	// cgroup v1 without cgroup namespaces the path shows the inner pod's
	// cgroup nested in the node pod's.
	out, err := exec.Command(e.s.Bin, "exec", "hello-inner", "--root-dir", in.root, "--", "cat", "/proc/self/cgroup").CombinedOutput()
	if err != nil {
		t.Fatalf("skiff exec in the inner pod: %v: %s", err, out)
	}
	if regexp.MustCompile(`(?m)^\d+:memory:/`).Match(out) {
		nested := regexp.MustCompile(`(?m)^\d+:memory:.*pod` + regexp.QuoteMeta(string(node.UID)) + `.*/pod` + regexp.QuoteMeta(string(p.UID)) + `/`)
		line := nested.Find(out)
		if line == nil {
			t.Errorf("inner pod's cgroups are not below the node pod's (pod%s):\n%s", node.UID, out)
		}
		t.Logf("inner pod's memory cgroup %s", line)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		logs, _ := filepath.Glob(filepath.Join(in.logs, "default_hello-inner_*", "app", "0.log"))
		if len(logs) != 1 {
			return false, fmt.Sprintf("inner pod log files %v", logs)
		}
		b, _ := os.ReadFile(logs[0])
		return strings.Contains(string(b), "hello-from-the-inner-pod"), fmt.Sprintf("inner pod log %q", b)
	})

	// The node pod goes with everything it started, and its image with it,
	// so the later tests see the outer containerd as before.
	e.RemoveManifest(t, "node.yaml")
	e.WaitForPodGone(t, PodName("node"), podGoneTimeout)
	e.waitPodObjectsGone(t, string(node.UID), podGoneTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.CRI(t).RemoveImage(ctx, ref); err != nil {
		t.Errorf("remove the node image: %v", err)
	}
}

// nodePodManifest is the node image as a privileged static pod: the inner
// skiff's manifests, root dir and pod logs are hostPaths.
func nodePodManifest(ref, manifests, root, logs string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: node}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: skiff
    image: %s
    imagePullPolicy: Never
    args: [--pod-manifest-path=/etc/skiff/manifests, --root-dir=/var/lib/skiff, --pod-logs-dir=/var/log/pods,
      --hostname-override=inner, --pod-cidr=10.89.0.0/16, --v=4]
    securityContext: {privileged: true}
    volumeMounts:
    - {name: manifests, mountPath: /etc/skiff/manifests, readOnly: true}
    - {name: root, mountPath: /var/lib/skiff}
    - {name: logs, mountPath: /var/log/pods}
  volumes:
  - {name: manifests, hostPath: {path: %q, type: Directory}}
  - {name: root, hostPath: {path: %q, type: Directory}}
  - {name: logs, hostPath: {path: %q, type: Directory}}
`, ref, manifests, root, logs)
}

// archiveRef returns the one tag of a docker-archive (its manifest.json).
func archiveRef(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("node image: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("node image %s: no manifest.json", archive)
		}
		if err != nil {
			return "", fmt.Errorf("node image %s: %w", archive, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", fmt.Errorf("node image %s: manifest.json: %w", archive, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 {
			return "", fmt.Errorf("node image %s: manifest.json: want one image with one tag, got %+v", archive, m)
		}
		return m[0].RepoTags[0], nil
	}
}
