package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/volumes"
)

// realVolumes adapts a volumes.Manager to the agent's port, as the node
// does (node.agentVolumes), for the tests that run a real one.
type realVolumes struct{ *volumes.Manager }

func (v realVolumes) SetUp(ctx context.Context, pod *v1.Pod) (map[string]PodVolume, error) {
	vols, err := v.Manager.SetUp(ctx, pod)
	var se *volumes.SetUpError
	if errors.As(err, &se) {
		return nil, &VolumeSetUpError{Volume: se.Volume, Err: se.Err}
	}
	if err != nil {
		return nil, err
	}
	out := map[string]PodVolume{}
	for name, vol := range vols {
		out[name] = PodVolume{HostPath: vol.HostPath, ReadOnly: vol.ReadOnly}
	}
	return out, nil
}

// SubPath is the unpinned check: pinning mounts, which needs root.
func (v realVolumes) SubPath(_ *v1.Pod, _ string, _ int, _ string, vol PodVolume, sub string) (string, error) {
	return volumes.SubPath(vol.HostPath, sub)
}

func (v realVolumes) CheckSizeLimits(pod *v1.Pod) (*SizeLimitExceeded, error) {
	sv, err := v.Manager.CheckSizeLimits(pod)
	if err != nil || sv == nil {
		return nil, err
	}
	return &SizeLimitExceeded{Volume: sv.Volume, Limit: sv.Limit, Used: sv.Used}, nil
}

// tearDownRecorder is a VolumeManager that records TearDown calls.
type tearDownRecorder struct {
	VolumeManager
	mu   sync.Mutex
	torn []types.UID
}

func (r *tearDownRecorder) TearDown(ctx context.Context, uid types.UID) error {
	r.mu.Lock()
	r.torn = append(r.torn, uid)
	r.mu.Unlock()
	return r.VolumeManager.TearDown(ctx, uid)
}

func (r *tearDownRecorder) tornDown(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.torn, uid)
}

// startVolumeAgent runs an agent whose volume manager (a real one, on a
// temporary pods directory) reads store.
func startVolumeAgent(t *testing.T, store *objects.Store) (*harness, string, *tearDownRecorder) {
	t.Helper()
	rt := newFakeRuntime()
	cfg := testConfig(t, rt)
	cfg.PodsDir = filepath.Join(t.TempDir(), "pods")
	vm, err := volumes.New(volumes.Config{PodsDir: cfg.PodsDir, Objects: store, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	rec := &tearDownRecorder{VolumeManager: realVolumes{vm}}
	cfg.Objects, cfg.Volumes, cfg.ObjectChanges = store, rec, store.Subscribe()
	return runTestAgent(t, cfg), cfg.PodsDir, rec
}

func volumePod() *v1.Pod {
	pod := testPod("Always", nil, "app")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/logs", SubPath: "logs", ReadOnly: true},
		{Name: "cfg", MountPath: "/etc/app"},
	}
	return pod
}

func appSpec(t *testing.T, h *harness) runtime.ContainerSpec {
	t.Helper()
	cs, err := h.rt.ListContainers(context.Background(), runtime.ContainerFilter{})
	if err != nil || len(cs) == 0 {
		t.Fatalf("ListContainers = %v, %v", cs, err)
	}
	spec, ok := h.rt.ContainerSpecOf(cs[0].ID)
	if !ok {
		t.Fatal("no spec")
	}
	return spec
}

// TestAgentMountsPodVolumes_G1: the pod's volumes are set up before its
// containers and passed as mounts (subPath created, object volumes
// read-only); removing the pod tears them down.
func TestAgentMountsPodVolumes_G1(t *testing.T) {
	store := objects.NewStore()
	store.Replace([]*v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-config"}, Data: map[string]string{"k": "v"}}}, nil)
	h, podsDir, rec := startVolumeAgent(t, store)
	h.src.ch <- []*v1.Pod{volumePod()}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	vols := filepath.Join(podsDir, "uid1", "volumes")
	scratch := filepath.Join(vols, volumes.PluginEmptyDir, "scratch")
	want := map[string]runtime.Mount{
		"/scratch": {HostPath: scratch, ContainerPath: "/scratch"},
		"/logs":    {HostPath: filepath.Join(scratch, "logs"), ContainerPath: "/logs", ReadOnly: true},
		"/etc/app": {HostPath: filepath.Join(vols, volumes.PluginConfigMap, "cfg"), ContainerPath: "/etc/app", ReadOnly: true},
	}
	got := map[string]runtime.Mount{}
	for _, m := range appSpec(t, h).Mounts {
		got[m.ContainerPath] = m
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("mount %s = %+v, want %+v", path, got[path], w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(vols, volumes.PluginConfigMap, "cfg", "k")); err != nil || string(b) != "v" {
		t.Errorf("configMap file = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "logs")); err != nil {
		t.Errorf("subPath directory: %v", err)
	}

	h.src.ch <- nil
	h.eventually("pod gone", func() bool { return h.pod("uid1") == nil })
	if _, err := os.Stat(filepath.Join(podsDir, "uid1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod directory after removal: %v, want gone", err)
	}
	if !rec.tornDown("uid1") {
		t.Error("the removed pod's volumes were not torn down")
	}
}

// TestAgentVolumeFailureIsFailedMount_G1: a volume that cannot be set up
// keeps the pod Pending (ContainerCreating, no sandbox) with the kubelet's
// FailedMount event; once the object appears the pod starts.
func TestAgentVolumeFailureIsFailedMount_G1(t *testing.T) {
	store := objects.NewStore()
	h, _, _ := startVolumeAgent(t, store)
	h.src.ch <- []*v1.Pod{volumePod()}
	const msg = `MountVolume.SetUp failed for volume "cfg" : configmap "app-config" not found`
	h.eventually("FailedMount event", func() bool { return h.hasEvent(EventFailedMount, msg) })
	p := h.pod("uid1")
	if p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if w := containerWaiting(p, "app"); w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("app waiting = %+v, want ContainerCreating", w)
	}
	for _, c := range h.rt.Calls() {
		if strings.HasPrefix(c, "RunSandbox") || strings.HasPrefix(c, "CreateContainer") {
			t.Errorf("%s before the volumes were set up", c)
		}
	}
	store.Replace([]*v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-config"}, Data: map[string]string{"k": "v"}}}, nil)
	h.eventually("pod Running once the ConfigMap exists", func() bool { return h.phase("uid1") == v1.PodRunning })
}

// TestAgentCleansOrphanedPodDirs_G1: once the sources listed, pod
// directories of pods nobody knows are removed; a running pod's stays.
func TestAgentCleansOrphanedPodDirs_G1(t *testing.T) {
	store := objects.NewStore()
	store.Replace([]*v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-config"}}}, nil)
	rt := newFakeRuntime()
	cfg := testConfig(t, rt)
	cfg.PodsDir = filepath.Join(t.TempDir(), "pods")
	stale := filepath.Join(cfg.PodsDir, "stale-uid", "volumes", volumes.PluginEmptyDir, "x")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	vm, _ := volumes.New(volumes.Config{PodsDir: cfg.PodsDir, Objects: store, Logger: cfg.Logger})
	cfg.Volumes = realVolumes{vm}
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{volumePod()}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.eventually("stale pod directory removed", func() bool {
		_, err := os.Stat(filepath.Join(cfg.PodsDir, "stale-uid"))
		return errors.Is(err, fs.ErrNotExist)
	})
	if _, err := os.Stat(filepath.Join(cfg.PodsDir, "uid1", "volumes")); err != nil {
		t.Errorf("running pod's volumes: %v", err)
	}
}

// TestContainerImageVolumeMounts: an image volume is the runtime's to
// mount, by image ID, read-only whatever the mount says, its subPath (or
// expanded subPathExpr) a directory of the image, never of the node.
func TestContainerImageVolumeMounts(t *testing.T) {
	vols := map[string]PodVolume{"img": {ReadOnly: true}}
	env := []runtime.KeyValue{{Key: "DIR", Value: "etc"}}
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "img", MountPath: "/img"},
		{Name: "img", MountPath: "/sub", SubPathExpr: "$(DIR)"},
	}}
	got, err := containerMounts(c, vols, map[string]string{"img": "sha256:abc"}, env, mountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.Mount{
		{ContainerPath: "/img", ReadOnly: true, Image: "sha256:abc"},
		{ContainerPath: "/sub", ReadOnly: true, Image: "sha256:abc", ImageSubPath: "etc"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestContainerMounts_G1: subPathExpr from the env, propagation modes,
// a mount of an unknown volume.
func TestContainerMounts_G1(t *testing.T) {
	vol := t.TempDir()
	vols := map[string]PodVolume{"v": {HostPath: vol}, "cm": {HostPath: vol, ReadOnly: true}}
	env := []runtime.KeyValue{{Key: "POD_NAME", Value: "web-1"}}
	prop := func(m v1.MountPropagationMode) *v1.MountPropagationMode { return &m }
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "v", MountPath: "/a", SubPathExpr: "logs/$(POD_NAME)", MountPropagation: prop(v1.MountPropagationHostToContainer)},
		{Name: "cm", MountPath: "/b", MountPropagation: prop(v1.MountPropagationNone)},
		{Name: "v", MountPath: "/c", MountPropagation: prop(v1.MountPropagationBidirectional)},
	}}
	got, err := containerMounts(c, vols, nil, env, mountOptions{privileged: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.Mount{
		{HostPath: filepath.Join(vol, "logs/web-1"), ContainerPath: "/a", Propagation: runtime.PropagationHostToContainer},
		{HostPath: vol, ContainerPath: "/b", ReadOnly: true},
		{HostPath: vol, ContainerPath: "/c", Propagation: runtime.PropagationBidirectional},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := containerMounts(c, vols, nil, env, mountOptions{}); err == nil || !strings.Contains(err.Error(), "bidirectional mount propagation") {
		t.Errorf("Bidirectional in an unprivileged container: %v", err)
	}
	bad := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}}
	if _, err := containerMounts(bad, vols, nil, env, mountOptions{}); err == nil || err.Error() != `cannot find volume "nope" to mount into container "app"` {
		t.Errorf("unknown volume: %v", err)
	}
	missing := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/x", SubPathExpr: "$(UNSET)"}}}
	if _, err := containerMounts(missing, vols, nil, env, mountOptions{}); err == nil || !strings.Contains(err.Error(), "missing value for UNSET") {
		t.Errorf("unset variable: %v", err)
	}
	// An expansion to an absolute path fails the container's
	// configuration, as the kubelet's makeMounts (the conformance test
	// "should fail substituting values in a volume subpath with absolute
	// path" waits for CreateContainerConfigError).
	abs := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/x", SubPathExpr: "$(ABS)"}}}
	_, err = containerMounts(abs, vols, nil, append(env, runtime.KeyValue{Key: "ABS", Value: "/tmp"}), mountOptions{})
	if err == nil || !strings.Contains(err.Error(), "error SubPath `/tmp` must not be an absolute path") || startFailureReason(err) != reasonCreateContainerConfigError {
		t.Errorf("absolute subPathExpr: %v (%s), want CreateContainerConfigError", err, startFailureReason(err))
	}
}

// TestAgentEvictsOverSizeLimit_G14: a pod whose disk emptyDir exceeds its
// sizeLimit is failed with the kubelet's Evicted reason, message and event.
func TestAgentEvictsOverSizeLimit_G14(t *testing.T) {
	h, podsDir, _ := startVolumeAgent(t, objects.NewStore())
	pod := testPod("Always", nil, "app")
	limit := resource.MustParse("64Ki")
	pod.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.agent.volumes.checkSizeLimits()
	if p := h.pod("uid1"); p.Status.Phase != v1.PodRunning {
		t.Fatalf("evicted under the limit: %s %s", p.Status.Reason, p.Status.Message)
	}
	dir := filepath.Join(podsDir, "uid1", "volumes", volumes.PluginEmptyDir, "cache")
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 128<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	h.agent.volumes.checkSizeLimits()
	const msg = `Usage of EmptyDir volume "cache" exceeds the limit "64Ki". `
	h.eventually("pod Failed", func() bool { return h.phase("uid1") == v1.PodFailed })
	if p := h.pod("uid1"); p.Status.Reason != "Evicted" || p.Status.Message != msg {
		t.Errorf("status reason %q message %q, want Evicted %q", p.Status.Reason, p.Status.Message, msg)
	}
	if !h.hasEvent(EventEvicted, msg) {
		t.Errorf("no Evicted event: %+v", h.agent.Events())
	}
}

// TestAgentRefreshesVolumesOnObjectChange_G13: an edit of a ConfigMap
// reaches the mounted volume (the ..data swap) without any pod change.
func TestAgentRefreshesVolumesOnObjectChange_G13(t *testing.T) {
	store := objects.NewStore()
	cm := func(v string) []*v1.ConfigMap {
		return []*v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-config"}, Data: map[string]string{"k": v}}}
	}
	store.Replace(cm("v1"), nil)
	h, podsDir, _ := startVolumeAgent(t, store)
	h.src.ch <- []*v1.Pod{volumePod()}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	file := filepath.Join(podsDir, "uid1", "volumes", volumes.PluginConfigMap, "cfg", "k")
	store.Replace(cm("v2"), nil)
	h.eventually("the edit in the volume", func() bool {
		b, _ := os.ReadFile(file)
		return string(b) == "v2"
	})
}

// TestRecursiveReadOnly: the kubelet's resolution of a mount's
// recursiveReadOnly against the runtime's support, with its messages.
func TestRecursiveReadOnly(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	hostToContainer := v1.MountPropagationHostToContainer
	tests := []struct {
		name      string
		vm        v1.VolumeMount
		supported bool
		want      bool
		wantErr   string
	}{
		{"unset", v1.VolumeMount{Name: "v", ReadOnly: true}, true, false, ""},
		{"Disabled", v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled)}, true, false, ""},
		{"IfPossible, supported", v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)}, true, true, ""},
		{"IfPossible, unsupported: plain read-only", v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)}, false, false, ""},
		{"Enabled, supported", v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, true, true, ""},
		{"Enabled, unsupported", v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, false, false,
			`volume "v" requested recursive read-only mode, but it is not supported by the runtime`},
		{"not read-only", v1.VolumeMount{Name: "v", RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, true, false,
			`volume "v" requested recursive read-only mode, but it is not read-only`},
		{"propagation", v1.VolumeMount{Name: "v", ReadOnly: true, MountPropagation: &hostToContainer, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}, true, false,
			`volume "v" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
	}
	for _, tt := range tests {
		got, err := recursiveReadOnly(tt.vm, tt.supported)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
			t.Errorf("%s: %v, %v; want %v, %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	// In containerMounts the error is the container's config error.
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)}}}
	_, err := containerMounts(c, map[string]PodVolume{"v": {HostPath: t.TempDir()}}, nil, nil, mountOptions{})
	if startFailureReason(err) != reasonCreateContainerConfigError || !strings.HasPrefix(err.Error(), "failed to resolve recursive read-only mode: ") {
		t.Errorf("containerMounts on a runtime without it: %v (%s)", err, startFailureReason(err))
	}
	ms, err := containerMounts(c, map[string]PodVolume{"v": {HostPath: "/h"}}, nil, nil, mountOptions{rro: true})
	if err != nil || !ms[0].RecursiveReadOnly || !ms[0].ReadOnly {
		t.Errorf("containerMounts with it: %+v, %v", ms, err)
	}
}

func TestVolumeRetryDelay(t *testing.T) {
	notBound := &VolumeSetUpError{Volume: "data", Err: fmt.Errorf("wrapped: %w", volumes.ErrClaimNotReady)}
	other := &VolumeSetUpError{Volume: "cfg", Err: errors.New(`configmap "x" not found`)}
	for _, tt := range []struct {
		failures int
		err      error
		want     time.Duration
	}{
		{0, other, 500 * time.Millisecond},
		{2, other, 2 * time.Second},
		{3, other, 4 * time.Second},
		{20, other, volumeRetryMax},
		{0, notBound, 500 * time.Millisecond},
		{3, notBound, claimRetryMax},
		{20, notBound, claimRetryMax},
	} {
		if got := volumeRetryDelay(tt.failures, tt.err); got != tt.want {
			t.Errorf("volumeRetryDelay(%d, %v) = %s, want %s", tt.failures, tt.err, got, tt.want)
		}
	}
}
