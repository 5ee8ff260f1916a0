package node

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/internal/diskpressure"
)

// TestDiskPressureAdmitter: under DiskPressure API pods are rejected as the
// kubelet's eviction manager rejects them; static and system-critical pods
// are admitted; without pressure all are.
func TestDiskPressureAdmitter(t *testing.T) {
	usage := diskpressure.Usage{Bytes: 100, BytesAvailable: 50}
	m := diskpressure.New(diskpressure.Config{Paths: []diskpressure.Path{{Signal: "nodefs", Dir: "/r"}},
		Statfs: func(string) (diskpressure.Usage, error) { return usage, nil }})
	admit := diskPressureAdmitter(m)
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "api"}}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "file"}}}
	critical := api.DeepCopy()
	critical.Spec.Priority = ptr.To[int32](2000000000)
	check := func(what string, pod *v1.Pod, wantOK bool) {
		t.Helper()
		ok, reason, msg := admit(pod)
		if ok != wantOK || (!ok && (reason != "Evicted" || msg != "The node had condition: [DiskPressure]. ")) {
			t.Errorf("%s: admit %v %q %q, want %v (Evicted)", what, ok, reason, msg, wantOK)
		}
	}
	m.Check()
	check("API pod, no pressure", api, true)
	usage.BytesAvailable = 1
	m.Check()
	check("API pod, pressure", api, false)
	check("static pod, pressure", static, true)
	check("system-critical pod, pressure", critical, true)
}

// TestDiskPaths: nodefs is the root dir and the pod logs; imagefs the
// managed containerd's directory, none with an external runtime.
func TestDiskPaths(t *testing.T) {
	n := &Node{cfg: Config{RootDir: "/var/lib/skiff", PodLogsDir: "/var/log/pods"}}
	want := []diskpressure.Path{{Signal: "nodefs", Dir: "/var/lib/skiff"}, {Signal: "nodefs", Dir: "/var/log/pods"},
		{Signal: "imagefs", Dir: "/var/lib/skiff/containerd"}}
	if got := n.diskPaths(); !slices.Equal(got, want) {
		t.Errorf("managed: %v, want %v", got, want)
	}
	n.cfg.RuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	if got := n.diskPaths(); !slices.Equal(got, want[:2]) {
		t.Errorf("external: %v, want %v", got, want[:2])
	}
}
