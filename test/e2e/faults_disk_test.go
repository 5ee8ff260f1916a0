package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestFaultsDiskFull: the file system holding the root dir and the pod
// logs fills up (ENOSPC). Running pods keep running and Ready, the node
// reports DiskPressure with an event naming the threshold and the
// directory, the probe checkpoint is never left corrupt, and once space
// returns logs are written again, a new pod starts and an agent restart
// finds its state intact.
func TestFaultsDiskFull(t *testing.T) {
	e, sc := faultsEnv(t)
	small := e.smallRoot(t)
	e.StartAgent(t, AgentOptions{})
	pods := map[string]string{
		"talker": podSpec("talker", []string{"terminationGracePeriodSeconds: 2"}, nil, []string{container("app", busyboxImage,
			[]string{"sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done"}, nil)}),
		"probed": podSpec("probed", []string{"terminationGracePeriodSeconds: 2"}, nil, []string{sleeper("app",
			`readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}`)}),
		"quiet": faultPod("quiet"),
	}
	for name, spec := range pods {
		e.WriteManifest(t, name+".yaml", spec)
	}
	before, _ := e.waitConverged(t, len(pods), convergeTimeout)

	fill := filepath.Join(small, "fill")
	if err := fillUp(fill); err != nil {
		t.Fatal(err)
	}
	filled := time.Now()
	var pressure *v1.Event
	for pressure == nil {
		for _, ev := range e.nodeEvents(t) {
			if ev.Reason == "EvictionThresholdMet" && strings.Contains(ev.Message, "nodefs.available") && strings.Contains(ev.Message, small) {
				pressure = &ev
			}
		}
		if time.Since(filled) > time.Minute {
			t.Fatal("no EvictionThresholdMet node event naming the full file system within 1 min")
		}
		time.Sleep(time.Second)
	}
	seen := time.Since(filled)
	// The node runs on with its disk full for a while.
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if probs := e.snapshot(t).problems(len(pods)); len(probs) > 0 {
			t.Fatalf("with the disk full: %s", strings.Join(probs, "; "))
		}
		checkCheckpoint(t, e.root())
	}
	talkerLog := e.containerLogPath(t, PodName("talker"), "app")
	sizeFull := fileSize(talkerLog)

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	e.WriteManifest(t, "after.yaml", faultPod("after"))
	after, _ := e.waitConverged(t, len(pods)+1, convergeTimeout)
	for fileSize(talkerLog) <= sizeFull {
		if time.Since(freed) > time.Minute {
			t.Fatalf("container log %s not written again within 1 min of freeing space (%d bytes)", talkerLog, sizeFull)
		}
		time.Sleep(time.Second)
	}
	recovered := time.Since(freed)
	e.KillAgent(t)
	e.StartAgent(t, AgentOptions{})
	final, _ := e.waitConverged(t, len(pods)+1, convergeTimeout)
	checkCheckpoint(t, e.root())
	if final.restarts != before.restarts || after.restarts != before.restarts {
		t.Errorf("restarts %d -> %d -> %d across the full disk and the restart", before.restarts, after.restarts, final.restarts)
	}
	e.report(t, faultRecord{scenario: "root dir and pod logs disk full (ENOSPC)", scale: sc.name, pods: len(pods), restarts: final.restarts - before.restarts,
		recovery: recovered.Round(100 * time.Millisecond).String(),
		notes: fmt.Sprintf("DiskPressure event after %s (%q); 30 s full: pods Running and Ready, probe checkpoint valid; logs written again after space returned",
			seen.Round(time.Second), pressure.Message)})
}

// fillUp writes path until the file system is full.
func fillUp(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill %s: %w", path, err)
		}
	}
}

// checkCheckpoint fails unless the probe checkpoint under root, if any,
// is valid JSON.
func checkCheckpoint(t *testing.T, root string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "probes.json"))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil || !json.Valid(data) {
		t.Fatalf("probe checkpoint %s: %v, valid JSON %v (%d bytes)", filepath.Join(root, "probes.json"), err, json.Valid(data), len(data))
	}
}

// containerLogPath is the log file of the pod's container under the test's
// pod logs dir.
func (e *Env) containerLogPath(t *testing.T, pod, container string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.PodLogsDir, namespace+"_"+pod+"_*", container, "*.log"))
	if len(matches) == 0 {
		t.Fatalf("no log file of %s/%s under %s", pod, container, e.PodLogsDir)
	}
	return matches[len(matches)-1]
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TestFaultsDiskFullOfflineCopy (API mode, --offline-pods): with the root
// dir's disk full the node's DiskPressure condition is True in the API
// server, the offline copy stays valid while a change to what it holds
// cannot be written, the pod stays Ready, and once space returns the
// condition clears and the copy catches up.
func TestFaultsDiskFullOfflineCopy(t *testing.T) {
	e, sc := faultsEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	small := e.smallRoot(t)
	e.StartAgent(t, AgentOptions{Args: []string{"--kubeconfig", c.Kubeconfig(nodeName), "--offline-pods"}})
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "disk-cm", Namespace: namespace}, Data: map[string]string{"v": "before"}}
	if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().ConfigMaps(namespace).Delete(ctx, "disk-cm", metav1.DeleteOptions{}) })
	pod := apiPod("keep", 2, "sleep 100000", v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "disk-cm"}}}})
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "keep", "Ready", podReady)
	cmFile := filepath.Join(e.root(), "offline", "configmaps", namespace+"_disk-cm.json")
	waitFileHolds(t, cmFile, `"before"`)

	fill := filepath.Join(small, "fill")
	if err := fillUp(fill); err != nil {
		t.Fatal(err)
	}
	filled := time.Now()
	waitDiskPressure(t, cs, v1.ConditionTrue)
	seen := time.Since(filled)
	cm.Data["v"] = "after"
	if _, err := cs.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		checkJSONFiles(t, filepath.Join(e.root(), "offline"))
		if p, err := e.findPod("keep"); err != nil || p == nil || !runningAndReady(p) {
			t.Fatalf("pod keep with the disk full: %v, %s", err, dump(p))
		}
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	waitDiskPressure(t, cs, v1.ConditionFalse)
	waitFileHolds(t, cmFile, `"after"`)
	checkJSONFiles(t, filepath.Join(e.root(), "offline"))
	e.report(t, faultRecord{scenario: "root dir disk full, API mode with --offline-pods", scale: sc.name, pods: 1,
		recovery: time.Since(freed).Round(time.Second).String(),
		notes:    fmt.Sprintf("DiskPressure True in the API server after %s, False again after space returned; the offline copy valid while full and caught up after", seen.Round(time.Second))})
}

// smallRoot mounts a 64 MiB tmpfs under the test's directory and makes
// it hold the agent's root dir and pod logs; it returns the mount point.
func (e *Env) smallRoot(t *testing.T) string {
	t.Helper()
	small := filepath.Join(e.Dir, "small")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount a 64 MiB tmpfs: %v", err)
	}
	e.afterAgent = append(e.afterAgent, func() { unmountUnder(small); _ = unix.Unmount(small, unix.MNT_DETACH) })
	e.useRootDir(filepath.Join(small, "root"))
	e.PodLogsDir = filepath.Join(small, "podlogs")
	return small
}

// waitDiskPressure waits up to 1 min for the node's DiskPressure
// condition in the API server to be want.
func waitDiskPressure(t *testing.T, cs kubernetes.Interface, want v1.ConditionStatus) {
	t.Helper()
	var last v1.ConditionStatus
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeDiskPressure {
				last = c.Status
			}
		}
		return last == want, nil
	})
	if err != nil {
		t.Fatalf("node DiskPressure %q after 1 min, want %q", last, want)
	}
}

// waitFileHolds waits up to 1 min for path to contain part.
func waitFileHolds(t *testing.T, path, part string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), part) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold %s after 1 min: %v %q", path, part, err, data)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkJSONFiles fails unless every regular file under dir is valid JSON.
func checkJSONFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return fmt.Errorf("%s is not valid JSON (%d bytes)", path, len(data))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("offline copy: %v", err)
	}
}
