package staticpods

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func podByName(t *testing.T, pods []*v1.Pod, name string) *v1.Pod {
	t.Helper()
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pod %q in %v", name, podNames(pods))
	return nil
}

func uidOf(t *testing.T, pods []*v1.Pod, name string) types.UID {
	t.Helper()
	return podByName(t, pods, name).UID
}

// firstPods runs a fresh Source on dir and returns its initial set.
func firstPods(t *testing.T, dir, node string) []*v1.Pod {
	t.Helper()
	return start(t, Config{Dir: dir, NodeName: node}).next()
}

// TestStaticPodIdentity checks name, namespace, nodeName, annotations,
// toleration and defaults as the kubelet sets them (H.16, A.55).
func TestStaticPodIdentity(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), podManifest("web", "busybox"))
	writeAtomic(t, filepath.Join(dir, "ns.yaml"), strings.Replace(podManifest("sys", "busybox"), "  name: sys\n", "  name: sys\n  namespace: kube-system\n", 1))
	pods := firstPods(t, dir, "worker.example.com")
	wantNames(t, pods, "default/web-worker.example.com", "kube-system/sys-worker.example.com")
	p := podByName(t, pods, "web-worker.example.com")
	if p.Spec.NodeName != "worker.example.com" {
		t.Errorf("spec.nodeName = %q", p.Spec.NodeName)
	}
	if len(p.UID) != 32 {
		t.Errorf("UID = %q, want 32 hex digits (md5)", p.UID)
	}
	if got := p.Annotations[ConfigHashAnnotation]; got != string(p.UID) {
		t.Errorf("%s = %q, want the UID %q", ConfigHashAnnotation, got, p.UID)
	}
	if got := p.Annotations[ConfigSourceAnnotation]; got != "file" {
		t.Errorf("%s = %q, want file", ConfigSourceAnnotation, got)
	}
	if _, err := time.Parse(time.RFC3339Nano, p.Annotations[ConfigSeenAnnotation]); err != nil {
		t.Errorf("%s = %q: %v", ConfigSeenAnnotation, p.Annotations[ConfigSeenAnnotation], err)
	}
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %v, want [%v]", p.Spec.Tolerations, want)
	}
	if p.Spec.RestartPolicy != v1.RestartPolicyAlways || *p.Spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("API defaults not applied: restartPolicy %q", p.Spec.RestartPolicy)
	}
}

// TestUIDStability: the UID depends only on node name, path and content, so
// it survives restarts (two Source instances) (A.3).
func TestUIDStability(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, podManifest("web", "busybox"))
	first := uidOf(t, firstPods(t, dir, testNode), "web-node-1")
	if again := uidOf(t, firstPods(t, dir, testNode), "web-node-1"); again != first {
		t.Errorf("UID changed across instances: %s then %s", first, again)
	}
	if other := uidOf(t, firstPods(t, dir, "node-2"), "web-node-2"); other == first {
		t.Errorf("UID does not depend on the node name")
	}
	writeAtomic(t, filepath.Join(dir, "copy.yaml"), podManifest("web2", "busybox"))
	writeAtomic(t, path, podManifest("web", "busybox:2"))
	if changed := uidOf(t, firstPods(t, dir, testNode), "web-node-1"); changed == first {
		t.Errorf("UID unchanged after the content changed")
	}
}

// TestUIDDependsOnPath: the same content in another file is another pod.
func TestUIDDependsOnPath(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeAtomic(t, filepath.Join(a, "web.yaml"), podManifest("web", "busybox"))
	writeAtomic(t, filepath.Join(b, "web.yaml"), podManifest("web", "busybox"))
	if uidOf(t, firstPods(t, a, testNode), "web-node-1") == uidOf(t, firstPods(t, b, testNode), "web-node-1") {
		t.Errorf("UID does not depend on the file path")
	}
}

// TestExplicitUIDKept: like the kubelet, a UID set in the manifest is used.
func TestExplicitUIDKept(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), strings.Replace(podManifest("web", "busybox"), "  name: web\n", "  name: web\n  uid: fixed-uid\n", 1))
	if got := uidOf(t, firstPods(t, dir, testNode), "web-node-1"); got != "fixed-uid" {
		t.Errorf("UID = %q, want the manifest's fixed-uid", got)
	}
}

func TestTolerationNotDuplicated(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}}}
	if err := applyStaticDefaults(pod, testNode, "/x", "now"); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 1 {
		t.Errorf("tolerations = %v, want the existing one only", pod.Spec.Tolerations)
	}
}

func TestIgnoredName(t *testing.T) {
	tests := map[string]bool{
		"web.yaml": false, "web.yml": false, "web.json": false, "web": false, "kube-apiserver.manifest": false, "v2.yaml": false,
		".web.yaml": true, ".": true, "web.yaml~": true, ".web.yaml.swp": true, "web.yaml.swp": true, "web.swx": true,
		"web.tmp": true, "4913": true, "5036": true, "#web.yaml#": true,
	}
	for name, want := range tests {
		if got := ignoredName(name); got != want {
			t.Errorf("ignoredName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Dir: "/etc/kubernetes/manifests", NodeName: "n1"}, ""},
		{"no dir", Config{NodeName: "n1"}, "Dir is required"},
		{"no node", Config{Dir: "/x"}, "NodeName is required"},
		{"bad node", Config{Dir: "/x", NodeName: "Node_1"}, `NodeName "Node_1" is not a valid node name`},
		{"negative resync", Config{Dir: "/x", NodeName: "n1", Resync: -time.Second}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New() error = %v", err)
				}
				if s.cfg.Resync != DefaultResync || s.cfg.Debounce != DefaultDebounce || s.cfg.Logger == nil {
					t.Errorf("defaults not filled: %+v", s.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
