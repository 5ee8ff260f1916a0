package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// gcTimeout guards the waits for a GC pass or a rotation (their periods
// are set to a few seconds in these tests).
const gcTimeout = 60 * time.Second

// nodeEvents returns the agent's events about the Node.
func (e *Env) nodeEvents(t *testing.T) []v1.Event {
	t.Helper()
	q := url.Values{"fieldSelector": {"involvedObject.kind=Node"}}
	code, body, err := e.get("/events?" + q.Encode())
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /events: status %d, error %v: %s", code, err, body)
	}
	var list v1.EventList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("decode /events: %v", err)
	}
	return list.Items
}

// images lists the runtime's images.
func (e *Env) images(t *testing.T) []*runtime.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := e.CRI(t).ListImages(ctx)
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	return imgs
}

// hasImage reports whether one of imgs is tagged ref.
func hasImage(imgs []*runtime.Image, ref string) bool {
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if tag == ref || strings.HasSuffix(tag, "/"+ref) {
				return true
			}
		}
	}
	return false
}

func imageTags(imgs []*runtime.Image) []string {
	var out []string
	for _, img := range imgs {
		out = append(out, img.RepoTags...)
	}
	return out
}

// TestImageGCFreesUnusedImages_F2_F4: with thresholds below this machine's
// real disk usage, the image GC removes the unused imported image
// (testserver) and keeps the one a running container uses (busybox) and
// the pause image; as it cannot reach the low threshold it records the
// kubelet's FreeDiskSpaceFailed event on the Node. The pod runs on.
//
// The pod starts under a first agent with the default policy; the second
// agent, which adopts it, has the aggressive one: its first GC pass, at
// start-up, already sees busybox in use.
func TestImageGCFreesUnusedImages_F2_F4(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	e.WriteManifest(t, "imggc.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: imggc
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, busyboxImage))
	pod := PodName("imggc")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	before := e.images(t)
	if !hasImage(before, testserverImage) || !hasImage(before, busyboxImage) {
		t.Fatalf("images before the GC: %v, want both test images", imageTags(before))
	}
	e.StopAgent(t)
	e.StartAgent(t, AgentOptions{Args: []string{
		"--image-gc-high-threshold=1", "--image-gc-low-threshold=0",
		"--image-minimum-gc-age=0s", "--image-gc-period=2s",
	}})
	eventually(t, gcTimeout, func() (bool, string) {
		imgs := e.images(t)
		return !hasImage(imgs, testserverImage), fmt.Sprintf("unused %s still present: %v", testserverImage, imageTags(imgs))
	})
	after := e.images(t)
	if !hasImage(after, busyboxImage) {
		t.Errorf("the image of a running container was removed: %v", imageTags(after))
	}
	if len(after) < 2 {
		t.Errorf("images left %v: want busybox and the pause image", imageTags(after))
	}
	var ev *v1.Event
	eventually(t, gcTimeout, func() (bool, string) {
		evs := e.nodeEvents(t)
		ev = findEvent(evs, "", "FreeDiskSpaceFailed", "Failed to garbage collect required amount of images. Attempted to free ")
		return ev != nil, "no FreeDiskSpaceFailed event on the Node; events:\n" + eventSummary(evs)
	})
	if ev.Type != v1.EventTypeWarning || ev.InvolvedObject.Name != nodeName || !strings.Contains(ev.Message, "bytes eligible to free.") {
		t.Errorf("event %+v, want a Warning about node %s in the kubelet's words", ev, nodeName)
	}
	// The pod was not touched: same container, still running.
	q := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	if a, b := statusOf(t, p, "app").ContainerID, statusOf(t, q, "app").ContainerID; a != b {
		t.Errorf("container changed from %s to %s", a, b)
	}
}

// TestContainerLogRotation: with a 4Ki --container-log-max-size and 3
// files at most, a chatty container's log is rotated as the kubelet does
// (<log>.<timestamp>, older rotated files gzipped), never more than 3
// files remain, and `skiff logs` still shows what it writes now.
func TestContainerLogRotation(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{Args: []string{
		"--container-log-max-size=4Ki", "--container-log-max-files=3", "--container-log-monitor-interval=3s",
	}})
	e.WriteManifest(t, "chatty.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo \"line $i padding padding padding padding padding padding padding padding padding padding\"; sleep 0.01; done"]
`, busyboxImage))
	pod := PodName("chatty")
	p := e.WaitForPod(t, pod, runningAndReady, podStartTimeout)
	dir := filepath.Join(podlogs.PodDir(e.PodLogsDir, namespace, pod, string(p.UID)), "app")
	files := func() []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("read log directory: %v", err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	var seen []string
	eventually(t, gcTimeout, func() (bool, string) {
		fs := files()
		if len(fs) > 3 {
			t.Errorf("%d log files: %v, want at most 3", len(fs), fs)
		}
		seen = fs
		gz := slices.ContainsFunc(fs, func(f string) bool { return strings.HasPrefix(f, "0.log.") && strings.HasSuffix(f, ".gz") })
		plain := slices.ContainsFunc(fs, func(f string) bool { return strings.HasPrefix(f, "0.log.") && !strings.HasSuffix(f, ".gz") })
		return gz && plain && slices.Contains(fs, "0.log"), fmt.Sprintf("log files %v: want 0.log, a plain and a gzipped rotated file", fs)
	})
	for range 3 { // a few more rotations: still at most 3 files
		time.Sleep(3 * time.Second)
		if fs := files(); len(fs) > 3 {
			t.Errorf("%d log files: %v, want at most 3", len(fs), fs)
		}
	}
	for _, f := range seen {
		if f != "0.log" && !strings.HasPrefix(f, "0.log.20") {
			t.Errorf("rotated file %s is not named <log>.<timestamp>", f)
		}
	}
	// skiff logs reads the current file: the newest lines are there.
	out, err := e.Skiff(t, "logs", pod, "--tail", "5")
	if err != nil || !strings.Contains(out, "line ") {
		t.Fatalf("skiff logs after rotation: %v\n%s", err, out)
	}
	var last string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		last = l
	}
	var n int
	if _, err := fmt.Sscanf(last, "line %d", &n); err != nil || n < 100 {
		t.Errorf("skiff logs' last line %q: want a recent line (over 100 written)", last)
	}
	// The log of a running container keeps growing after the rotations.
	st, err := os.Stat(filepath.Join(dir, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, gcTimeout, func() (bool, string) {
		now, err := os.Stat(filepath.Join(dir, "0.log"))
		return err == nil && (now.Size() != st.Size() || !now.ModTime().Equal(st.ModTime())), "0.log does not grow"
	})
}
