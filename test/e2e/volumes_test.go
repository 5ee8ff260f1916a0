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

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestVolumes_G1_G14 runs a pod with an emptyDir shared by two containers,
// a Memory emptyDir, hostPath directory and file volumes and a downwardAPI
// volume, checks each from inside the containers and on the host, checks a
// hostPath type failure's FailedMount event, and after the pods are
// deleted that nothing of them remains mounted or on disk.
func TestVolumes_G1_G14(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	hostDir := filepath.Join(e.Dir, "host", "data")
	hostFile := filepath.Join(e.Dir, "host", "files", "out.txt")
	writer := `echo hello > /shared/msg && echo from-pod > /host/out.txt && echo file-pod > /hostfile && ` + sleepLoop
	e.WriteManifest(t, "vols.yaml", podSpec("vols", []string{
		"terminationGracePeriodSeconds: 2",
		`volumes: [{name: shared, emptyDir: {}}, {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}},` +
			fmt.Sprintf(` {name: host, hostPath: {path: %q, type: DirectoryOrCreate}},`, hostDir) +
			fmt.Sprintf(` {name: hostfile, hostPath: {path: %q, type: FileOrCreate}},`, hostFile) +
			` {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}]`,
	}, nil, []string{
		container("writer", busyboxImage, []string{"sh", "-c", writer}, nil,
			`volumeMounts: [{name: shared, mountPath: /shared}, {name: host, mountPath: /host}, {name: shared, mountPath: /prop, mountPropagation: HostToContainer}, {name: hostfile, mountPath: /hostfile}, {name: mem, mountPath: /mem}]`),
		sleeper("reader", `volumeMounts: [{name: shared, mountPath: /shared, readOnly: true}, {name: info, mountPath: /etc/podinfo}, {name: shared, mountPath: /sub, subPath: nested/dir}]`),
	}))
	// A second pod's hostPath Directory does not exist: FailedMount.
	e.WriteManifest(t, "bad.yaml", podSpec("bad", []string{
		fmt.Sprintf(`volumes: [{name: missing, hostPath: {path: %q, type: Directory}}]`, filepath.Join(e.Dir, "nope")),
	}, nil, []string{sleeper("app", `volumeMounts: [{name: missing, mountPath: /m}]`)}))

	p := e.WaitForPod(t, PodName("vols"), runningAndReady, podStartTimeout)
	reader := e.PodContainer(t, PodName("vols"), "reader").ID
	writerID := e.PodContainer(t, PodName("vols"), "writer").ID
	eventually(t, 30*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(hostDir, "out.txt"))
		return string(b) == "from-pod\n", fmt.Sprintf("host file %s = %q", hostDir, b)
	})
	if got := e.Exec(t, reader, "cat", "/shared/msg"); got != "hello\n" {
		t.Errorf("reader sees /shared/msg = %q, want the writer's hello", got)
	}
	if b, err := os.ReadFile(hostFile); err != nil || string(b) != "file-pod\n" {
		t.Errorf("hostPath FileOrCreate on the host = %q, %v", b, err)
	}
	if got := e.Exec(t, reader, "sh", "-c", "echo x > /shared/y 2>&1 && echo writable || echo read-only"); !strings.Contains(got, "read-only") {
		t.Errorf("readOnly mount: %q", got)
	}
	if got := e.Exec(t, writerID, "sh", "-c", "grep ' /mem ' /proc/mounts"); !strings.Contains(got, "tmpfs") || !strings.Contains(got, "size=16384k") {
		t.Errorf("/mem mount = %q, want a 16Mi tmpfs", got)
	}
	if got := e.Exec(t, reader, "sh", "-c", "ls /etc/podinfo/..data/ && cat /etc/podinfo/labels"); !strings.Contains(got, "labels") {
		t.Errorf("downwardAPI volume: %q", got)
	}
	if got := e.Exec(t, reader, "sh", "-c", "test -d /sub && echo ok"); got != "ok\n" {
		t.Errorf("subPath mount: %q", got)
	}

	bad := e.WaitForPod(t, PodName("bad"), func(p *v1.Pod) bool { return p.UID != "" }, podStartTimeout)
	e.WaitForEvent(t, bad, "", "FailedMount",
		fmt.Sprintf(`MountVolume.SetUp failed for volume "missing" : hostPath type check failed: %s is not a directory`, filepath.Join(e.Dir, "nope")), podStartTimeout)
	if bad = e.WaitForPod(t, PodName("bad"), phaseIs(v1.PodPending), time.Second); statusOf(t, bad, "app").State.Waiting == nil {
		t.Errorf("bad pod's container: %s, want waiting", dump(statusOf(t, bad, "app")))
	}

	// Leak check: after deletion nothing of either pod is mounted or left
	// under <root-dir>/pods.
	uids := []types.UID{p.UID, bad.UID}
	e.RemoveManifest(t, "vols.yaml")
	e.RemoveManifest(t, "bad.yaml")
	e.WaitForPodGone(t, PodName("vols"), podGoneTimeout)
	e.WaitForPodGone(t, PodName("bad"), podGoneTimeout)
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range uids {
		dir := filepath.Join(e.s.Root, "pods", string(uid))
		if strings.Contains(string(mountinfo), dir) {
			t.Errorf("mounts of pod %s remain:\n%s", uid, mountinfo)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pod directory %s remains (%v)", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(hostDir, "out.txt")); err != nil {
		t.Errorf("hostPath data must outlive the pod: %v", err)
	}
}

// TestVolumesLeak_G14 creates 50 pods with every volume type skiff sets
// up (disk and Memory emptyDir, hostPath, configMap and secret from static
// objects, downwardAPI, projected, subPathExpr), deletes them, and checks
// that nothing of them is left mounted (tmpfs included) or under
// <root-dir>/pods.
func TestVolumesLeak_G14(t *testing.T) {
	const n = 50
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	host := filepath.Join(e.Dir, "host")
	e.WriteManifest(t, "objects.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak-cm}\ndata: {k: v}\n"+
		"---\napiVersion: v1\nkind: Secret\nmetadata: {name: leak-secret}\nstringData: {k: v}\n")
	for i := range n {
		e.WriteManifest(t, fmt.Sprintf("leak%d.yaml", i), podSpec(fmt.Sprintf("leak%d", i), []string{
			"terminationGracePeriodSeconds: 1",
			`volumes: [{name: disk, emptyDir: {sizeLimit: 1Mi}}, {name: mem, emptyDir: {medium: Memory}},` +
				fmt.Sprintf(` {name: host, hostPath: {path: %q, type: DirectoryOrCreate}},`, host) +
				` {name: info, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}},` +
				` {name: cm, configMap: {name: leak-cm}}, {name: sec, secret: {secretName: leak-secret}},` +
				` {name: proj, projected: {sources: [{downwardAPI: {items: [{path: uid, fieldRef: {fieldPath: metadata.uid}}]}}, {secret: {name: leak-secret}}]}}]`,
		}, nil, []string{
			sleeper("app", `volumeMounts: [{name: disk, mountPath: /disk}, {name: mem, mountPath: /mem}, {name: host, mountPath: /host, subPathExpr: "$(POD)"},`+
				` {name: info, mountPath: /info}, {name: cm, mountPath: /cm}, {name: sec, mountPath: /sec}, {name: proj, mountPath: /proj}]`,
				`env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]`),
		}))
	}
	var uids []types.UID
	for i := range n {
		p := e.WaitForPod(t, PodName(fmt.Sprintf("leak%d", i)), runningAndReady, podStartTimeout)
		uids = append(uids, p.UID)
	}
	for i := range n {
		e.RemoveManifest(t, fmt.Sprintf("leak%d.yaml", i))
	}
	for i := range n {
		e.WaitForPodGone(t, PodName(fmt.Sprintf("leak%d", i)), podGoneTimeout)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	podsDir := filepath.Join(e.s.Root, "pods")
	for _, uid := range uids {
		if strings.Contains(string(mountinfo), filepath.Join(podsDir, string(uid))) {
			t.Errorf("mounts of pod %s remain", uid)
		}
	}
	entries, err := os.ReadDir(podsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		t.Errorf("left in %s: %s", podsDir, ent.Name())
	}
	for i := range n {
		if _, err := os.Stat(filepath.Join(host, PodName(fmt.Sprintf("leak%d", i)))); err != nil {
			t.Errorf("hostPath subPathExpr directory of leak%d: %v", i, err)
		}
	}
}
