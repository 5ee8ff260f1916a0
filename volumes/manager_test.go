package volumes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/internal/objects"
)

// rootTests reports whether the tests that mount (tmpfs, bind mounts) may
// run: SKIFF_ROOT_TESTS=1 (make integration), as in the other packages.
func rootTests() bool { return os.Getenv("SKIFF_ROOT_TESTS") == "1" }

// needRoot skips a test that mounts unless SKIFF_ROOT_TESTS=1, and then
// insists on root.
func needRoot(t *testing.T) {
	t.Helper()
	if !rootTests() {
		t.Skip("set SKIFF_ROOT_TESTS=1 and run as root to run tests that mount (make integration)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("SKIFF_ROOT_TESTS=1 needs root")
	}
}

func newTestManager(t *testing.T, store objects.Getter) *Manager {
	t.Helper()
	m, err := New(Config{PodsDir: filepath.Join(t.TempDir(), "pods"), Objects: store,
		Allocatable: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever a test leaves mounted is unmounted, so that t.TempDir's
	// removal never crosses a mount.
	t.Cleanup(func() {
		mps, _ := mountsUnder(mountInfoPath, m.cfg.PodsDir)
		for _, mp := range mps {
			_ = unmount(mp)
		}
	})
	return m
}

func volPod(uid string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID(uid), Labels: map[string]string{"app": "x"}},
		Spec:       v1.PodSpec{Volumes: vols, Containers: []v1.Container{{Name: "app"}}},
	}
}

func cmVolume(name, cm string, optional bool, items ...v1.KeyToPath) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: cm}, Items: items, Optional: &optional}}}
}

func storeWith(cms ...*v1.ConfigMap) *objects.Store {
	s := objects.NewStore()
	s.Replace(cms, nil)
	return s
}

func configMap(name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}
}

func fsType(t *testing.T, dir string) string {
	t.Helper()
	mps, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	typ := ""
	for _, mp := range mps {
		if mp.Path == dir {
			typ = mp.FSType
		}
	}
	return typ
}

// TestSetUpEmptyDirAndHostPath_G1: the kubelet's layout and modes; a
// hostPath volume is the host path itself.
func TestSetUpEmptyDirAndHostPath_G1(t *testing.T) {
	m := newTestManager(t, nil)
	host := filepath.Join(t.TempDir(), "data")
	typ := v1.HostPathDirectoryOrCreate
	pod := volPod("uid-1",
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &typ}}})
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(m.cfg.PodsDir, "uid-1", "volumes", "kubernetes.io~empty-dir", "scratch")
	if vols["scratch"] != (Volume{HostPath: want}) {
		t.Errorf("scratch = %+v, want %s", vols["scratch"], want)
	}
	if info, err := os.Stat(want); err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir mode = %v, %v; want 0777", info.Mode(), err)
	}
	if vols["data"] != (Volume{HostPath: host}) {
		t.Errorf("data = %+v, want %s", vols["data"], host)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("DirectoryOrCreate: %v", err)
	}
	if err := m.TearDown(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.cfg.PodsDir, "uid-1", "volumes")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("volumes directory after TearDown: %v", err)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("TearDown touched the host path: %v", err)
	}
	if err := m.TearDown(context.Background(), pod.UID); err != nil {
		t.Errorf("second TearDown = %v, want idempotent", err)
	}
}

// TestSetUpErrors_G1: failures name the volume in the kubelet's FailedMount
// wording.
func TestSetUpErrors_G1(t *testing.T) {
	m := newTestManager(t, storeWith(configMap("cfg", map[string]string{"a": "1"})))
	typ := v1.HostPathDirectory
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		vol  v1.Volume
		want string
	}{
		{v1.Volume{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: missing, Type: &typ}}},
			`MountVolume.SetUp failed for volume "h" : hostPath type check failed: ` + missing + ` is not a directory`},
		{cmVolume("c", "absent", false), `MountVolume.SetUp failed for volume "c" : configmap "absent" not found`},
		{cmVolume("c", "cfg", false, v1.KeyToPath{Key: "b", Path: "b"}),
			`MountVolume.SetUp failed for volume "c" : configmap references non-existent config key: b`},
		{v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent"}}},
			`MountVolume.SetUp failed for volume "s" : secret "absent" not found`},
		{v1.Volume{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}}},
			`MountVolume.SetUp failed for volume "pvc" : persistentVolumeClaim needs an API server`},
		{v1.Volume{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/x"}}},
			`MountVolume.SetUp failed for volume "nfs" : volume type not supported by skiff yet`},
		{v1.Volume{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
			`MountVolume.SetUp failed for volume "p" : failed to fetch token: serviceAccountToken needs an API server`},
	}
	for i, tt := range tests {
		if tt.vol.Secret != nil || tt.vol.Projected != nil {
			if !rootTests() || os.Geteuid() != 0 {
				continue // secret and projected volumes are tmpfs
			}
		}
		_, err := m.SetUp(context.Background(), volPod("e"+string(rune('a'+i)), tt.vol))
		var se *SetUpError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("volume %s: SetUp = %v, want %q", tt.vol.Name, err, tt.want)
		}
	}
}

// TestConfigMapVolumeAndRefresh_G13: keys, items, modes and optional; a
// Refresh swaps ..data only when the content changed.
func TestConfigMapVolumeAndRefresh_G13(t *testing.T) {
	store := storeWith(configMap("cfg", map[string]string{"a": "1", "b": "2"}))
	m := newTestManager(t, store)
	mode := int32(0o600)
	pod := volPod("uid-cm",
		cmVolume("all", "cfg", false),
		cmVolume("some", "cfg", false, v1.KeyToPath{Key: "b", Path: "dir/bee", Mode: &mode}),
		cmVolume("opt", "absent", true),
		cmVolume("optkey", "cfg", true, v1.KeyToPath{Key: "zz", Path: "zz"}, v1.KeyToPath{Key: "a", Path: "a"}))
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	all := vols["all"].HostPath
	if !vols["all"].ReadOnly || !strings.HasSuffix(all, "/volumes/kubernetes.io~configmap/all") {
		t.Errorf("all = %+v", vols["all"])
	}
	if got := readLinked(t, all, "a") + readLinked(t, all, "b"); got != "12" {
		t.Errorf("all: a+b = %q", got)
	}
	if info, err := os.Stat(filepath.Join(all, "a")); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("default mode = %v, %v; want 0644", info.Mode(), err)
	}
	some := vols["some"].HostPath
	if info, err := os.Stat(filepath.Join(some, "dir/bee")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("item mode = %v, %v; want 0600", info.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(some, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a key not in items is present: %v", err)
	}
	entries, err := os.ReadDir(vols["opt"].HostPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			t.Errorf("optional missing ConfigMap: volume has %s, want it empty", e.Name())
		}
	}
	if _, err := os.Lstat(filepath.Join(vols["optkey"].HostPath, "zz")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("optional missing key: %v, want no file", err)
	}

	dataOf := func(dir string) string { s, _ := os.Readlink(filepath.Join(dir, "..data")); return s }
	before := dataOf(all)
	// SetUp again is a no-op; Refresh with the same content too.
	if _, err := m.SetUp(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	store.Replace([]*v1.ConfigMap{configMap("cfg", map[string]string{"a": "1", "b": "2"})}, nil)
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dataOf(all) != before {
		t.Errorf("..data swapped without a change")
	}
	store.Replace([]*v1.ConfigMap{configMap("cfg", map[string]string{"a": "9", "b": "2"})}, nil)
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dataOf(all) == before || readLinked(t, all, "a") != "9" {
		t.Errorf("after an edit: ..data %s -> %s, a = %q; want a new version with a = 9", before, dataOf(all), readLinked(t, all, "a"))
	}
	// A deleted (non-optional) ConfigMap keeps the last content, and
	// RefreshFailed hears of each volume that failed (the FailedMount
	// event).
	var failed []string
	m.cfg.RefreshFailed = func(p *v1.Pod, err *SetUpError) { failed = append(failed, p.Name+"/"+err.Volume) }
	store.Replace(nil, nil)
	if err := m.Refresh(context.Background()); err == nil {
		t.Error("Refresh with the ConfigMap gone: no error")
	}
	if len(failed) == 0 || !strings.HasPrefix(failed[0], pod.Name+"/") {
		t.Errorf("RefreshFailed calls %q, want the pod's volumes", failed)
	}
	if readLinked(t, all, "a") != "9" {
		t.Error("the last content was dropped")
	}
}

// TestMemoryVolumesAreTmpfs_G14: a Memory emptyDir is a tmpfs of the pod's
// size, secrets and projected volumes live on tmpfs, and TearDown leaves no
// mount and no directory. Root only.
func TestMemoryVolumesAreTmpfs_G14(t *testing.T) {
	needRoot(t)
	store := objects.NewStore()
	store.Replace(nil, []*v1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Data: map[string][]byte{"pw": []byte("x")}}})
	m := newTestManager(t, store)
	pod := volPod("uid-mem",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("8Mi"))}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
		v1.Volume{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}}})
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mem", "sec", "proj"} {
		if got := fsType(t, vols[name].HostPath); got != "tmpfs" {
			t.Errorf("%s is on %q, want tmpfs", name, got)
		}
	}
	if s, err := statfs(vols["mem"].HostPath); err != nil || s != 8<<20 {
		t.Errorf("mem tmpfs size = %d, %v; want 8Mi", s, err)
	}
	// The tmpfs root keeps the mount's 1777, as the kubelet's (a subPath
	// created in it copies the sticky bit: NodeConformance's EmptyDir
	// FSGroup nonexistent subPath test).
	if info, err := os.Stat(vols["mem"].HostPath); err != nil || info.Mode()&(fs.ModeSticky|fs.ModePerm) != fs.ModeSticky|0o777 {
		t.Errorf("mem tmpfs root mode %v (%v), want drwxrwxrwt", info.Mode(), err)
	}
	if got := readLinked(t, vols["proj"].HostPath, "pw") + "|" + readLinked(t, vols["proj"].HostPath, "labels"); got != `x|app="x"` {
		t.Errorf("projected = %q", got)
	}
	// A new Manager (an agent restart) finds the mounts and does not
	// stack another tmpfs.
	m2, _ := New(Config{PodsDir: m.cfg.PodsDir, Objects: store})
	if _, err := m2.SetUp(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	mps, _ := mountsUnder(mountInfoPath, m.PodDir(pod.UID))
	if len(mps) != 3 {
		t.Errorf("mounts after a second SetUp = %v, want 3", mps)
	}
	if err := m2.TearDown(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if mps, _ := mountsUnder(mountInfoPath, m.PodDir(pod.UID)); len(mps) != 0 {
		t.Errorf("mounts left after TearDown: %v", mps)
	}
	if _, err := os.Stat(filepath.Join(m.PodDir(pod.UID), "volumes")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("volumes directory after TearDown: %v", err)
	}
}

// TestCleanOrphans_G1: pod directories of unknown UIDs go (their mounts
// first); kept and set-up pods stay. Root only (mounts).
func TestCleanOrphans_G1(t *testing.T) {
	needRoot(t)
	m := newTestManager(t, nil)
	mem := v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}
	for _, uid := range []string{"orphan", "kept", "live"} {
		if _, err := m.SetUp(context.Background(), volPod(uid, mem)); err != nil {
			t.Fatal(err)
		}
	}
	// "orphan" and "kept" were set up by an earlier agent: a new Manager.
	m2, _ := New(Config{PodsDir: m.cfg.PodsDir})
	if _, err := m2.SetUp(context.Background(), volPod("live", mem)); err != nil {
		t.Fatal(err)
	}
	if err := m2.CleanOrphans(context.Background(), map[types.UID]bool{"kept": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir("orphan")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("orphan's directory: %v, want removed", err)
	}
	if mps, _ := mountsUnder(mountInfoPath, m.PodDir("orphan")); len(mps) != 0 {
		t.Errorf("orphan's mounts left: %v", mps)
	}
	for _, uid := range []types.UID{"kept", "live"} {
		if mps, _ := mountsUnder(mountInfoPath, m.PodDir(uid)); len(mps) != 1 {
			t.Errorf("%s: mounts %v, want its tmpfs kept", uid, mps)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestCheckSizeLimits_G14: a disk emptyDir over its sizeLimit is reported
// with the kubelet's eviction message; under it, or without a limit, not.
func TestCheckSizeLimits_G14(t *testing.T) {
	m := newTestManager(t, nil)
	limited := v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("64Ki"))}}}
	free := v1.Volume{Name: "free", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	pod := volPod("uid-size", free, limited)
	if !HasSizeLimits(pod) || HasSizeLimits(volPod("x", free)) {
		t.Fatal("HasSizeLimits")
	}
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	write := func(vol, name string, n int) {
		if err := os.WriteFile(filepath.Join(vols[vol].HostPath, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("free", "big", 1<<20)
	write("cache", "a", 32<<10)
	if v, err := m.CheckSizeLimits(pod); err != nil || v != nil {
		t.Fatalf("under the limit: %+v, %v", v, err)
	}
	write("cache", "b", 64<<10)
	v, err := m.CheckSizeLimits(pod)
	if err != nil || v == nil {
		t.Fatalf("over the limit: %+v, %v", v, err)
	}
	if want := `Usage of EmptyDir volume "cache" exceeds the limit "64Ki". `; v.Message() != want || v.Used < 96<<10 {
		t.Errorf("violation %q (used %d), want %q", v.Message(), v.Used, want)
	}
}

// TestSetUpNewerPodRewritesDownwardAPI_G7: SetUp with a newer object of a
// set-up pod (its labels edited through the API) rewrites the downwardAPI
// files, as the kubelet's volume manager does; the same object again
// writes nothing.
func TestSetUpNewerPodRewritesDownwardAPI_G7(t *testing.T) {
	m := newTestManager(t, nil)
	pod := volPod("uid-dw", v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}})
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(vols["info"].HostPath, "labels")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); got != `app="x"` {
		t.Fatalf("labels = %q, want app=\"x\"", got)
	}
	edited := pod.DeepCopy()
	edited.Labels["tier"] = "web"
	if _, err := m.SetUp(context.Background(), edited); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "app=\"x\"\ntier=\"web\""; got != want {
		t.Errorf("labels after the edit = %q, want %q", got, want)
	}
	data, err := os.Readlink(filepath.Join(vols["info"].HostPath, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUp(context.Background(), edited); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(vols["info"].HostPath, "..data")); again != data {
		t.Errorf("the same object rewrote the volume: ..data %s -> %s", data, again)
	}
}
