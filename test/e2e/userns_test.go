package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestUserNamespacePod: a pod with spec.hostUsers: false runs in a
// user namespace of its own where the runtime supports them (containerd
// 2 with runc 1.5): its root is not the node's (uid_map maps 0 to a block
// of 65536 IDs above the node's own), it writes to its emptyDir through
// the idmapped mount (the file is root's on the node), procMount Unmasked
// is allowed, and the block is recorded in the pod's directory. On a
// runtime without user namespaces (containerd 1.6) the pod is refused at
// admission, with the reason.
func TestUserNamespacePod(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	features := e.RuntimeFeatures(t)
	e.WriteManifest(t, "userns.yaml", podSpec("userns", []string{
		"terminationGracePeriodSeconds: 2",
		"hostUsers: false",
		"volumes: [{name: data, emptyDir: {}}]",
	}, nil, []string{
		sleeper("app", "volumeMounts: [{name: data, mountPath: /data}]"),
		sleeper("unmasked", "securityContext: {procMount: Unmasked}"),
	}))
	if !features.UserNamespaces {
		p := e.WaitForPod(t, PodName("userns"), phaseIs(v1.PodFailed), podStartTimeout)
		if p.Status.Reason != "UserNamespacesNotSupported" || !strings.Contains(p.Status.Message, "runtime does not support user namespaces") {
			t.Errorf("on a runtime without user namespaces: reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		return
	}
	p := e.WaitForPod(t, PodName("userns"), runningAndReady, podStartTimeout)
	app := e.PodContainer(t, p.Name, "app").ID
	f := strings.Fields(e.Exec(t, app, "cat", "/proc/self/uid_map"))
	if len(f) != 3 || f[0] != "0" || f[2] != "65536" {
		t.Fatalf("uid_map %q, want one line: 0 <host ID> 65536", f)
	}
	host, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil || host < 65536 || host%65536 != 0 {
		t.Errorf("uid_map maps root to host ID %s, want a multiple of 65536 above the node's own block", f[1])
	}
	if out := e.Exec(t, app, "sh", "-c", "echo hi > /data/f && cat /data/f && id -u"); out != "hi\n0\n" {
		t.Errorf("writing the emptyDir as the pod's root: %q", out)
	}
	podDir := filepath.Join(e.s.Root, "pods", string(p.UID))
	fi, err := os.Stat(filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "data", "f"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fileUID(fi); uid != 0 {
		t.Errorf("the pod root's file belongs to host UID %d, want 0 (idmapped emptyDir)", uid)
	}
	mapping, err := os.ReadFile(filepath.Join(podDir, "userns"))
	if err != nil || !strings.Contains(string(mapping), `"hostId":`+f[1]) {
		t.Errorf("the pod's mapping file: %s, %v; want host ID %s", mapping, err, f[1])
	}
	mounts := e.Exec(t, e.PodContainer(t, p.Name, "unmasked").ID, "cat", "/proc/self/mountinfo")
	if strings.Contains(mounts, " /proc/keys ") {
		t.Errorf("procMount Unmasked: /proc/keys is still masked")
	}
	e.RemoveManifest(t, "userns.yaml")
	e.WaitForPodGone(t, PodName("userns"), podGoneTimeout)
	if _, err := os.Stat(filepath.Join(podDir, "userns")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pod's mapping file outlives the pod: %v", err)
	}
}

// fileUID is the owner of a file on the node.
func fileUID(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}
