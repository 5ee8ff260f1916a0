package server

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
)

// fakePods is a PodProvider whose pods a test can replace.
type fakePods struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

func (f *fakePods) Pods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods)
}

func (f *fakePods) set(pods ...*v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

func running() v1.ContainerState {
	return v1.ContainerState{Running: &v1.ContainerStateRunning{}}
}

func waiting(reason string) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
}

func terminated(code int32, reason string) v1.ContainerState {
	return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
}

// webPod is default/web: an init container that completed, an app
// container running its second run, and containers without logs.
func webPod(appState v1.ContainerState) *v1.Pod {
	names := func(ns ...string) []v1.Container {
		var cs []v1.Container
		for _, n := range ns {
			cs = append(cs, v1.Container{Name: n, Image: "busybox"})
		}
		return cs
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec: v1.PodSpec{
			InitContainers: names("init"),
			Containers:     names("app", "creating", "pulling", "nostatus"),
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning,
			InitContainerStatuses: []v1.ContainerStatus{
				{Name: "init", State: terminated(0, "Completed")},
			},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", RestartCount: 1, State: appState,
					LastTerminationState: terminated(1, "Error")},
				{Name: "creating", State: waiting("ContainerCreating")},
				{Name: "pulling", State: waiting("ImagePullBackOff")},
			},
		},
	}
}

// setupLogs copies testdata/logs into a temp pod logs root as the logs of
// default/web and returns the root.
func setupLogs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	podDir := podlogs.PodDir(root, "default", "web", "uid-1")
	for _, rel := range []string{"app/0.log", "app/1.log", "init/0.log"} {
		data, err := os.ReadFile(filepath.Join("testdata", "logs", rel))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(podDir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// notifyBuffer is a concurrency-safe writer that signals every write.
type notifyBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newNotifyBuffer() *notifyBuffer { return &notifyBuffer{written: make(chan struct{}, 1)} }

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.written <- struct{}{}:
	default:
	}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor blocks until the buffer holds exactly want; it waits on write
// notifications, failing after a generous deadline.
func (b *notifyBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for b.String() != want {
		select {
		case <-b.written:
		case <-deadline:
			t.Fatalf("output = %q, want %q", b.String(), want)
		}
	}
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("call did not return")
		return nil
	}
}
