package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClaims serves claims and volumes from maps; a missing one is an
// error, as the API's NotFound.
type fakeClaims struct {
	claims  map[string]*v1.PersistentVolumeClaim // by namespace/name
	volumes map[string]*v1.PersistentVolume
}

func (f *fakeClaims) PersistentVolumeClaim(_ context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	if c, ok := f.claims[namespace+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("persistentvolumeclaims %q not found", name)
}

func (f *fakeClaims) PersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if pv, ok := f.volumes[name]; ok {
		return pv, nil
	}
	return nil, fmt.Errorf("persistentvolumes %q not found", name)
}

// boundClaim is claim default/<name> (UID claim-<name>) bound to volume pv.
func boundClaim(name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("claim-" + name)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
}

// claimedVolume is PersistentVolume name of source src bound to claim
// default/<claim>.
func claimedVolume(name, claim string, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: src,
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claim, UID: types.UID("claim-" + claim)}},
	}
}

func hostPathPV(path string) v1.PersistentVolumeSource {
	typ := v1.HostPathDirectoryOrCreate
	return v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ}}
}

func localPV(path string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}
}

func claimVolume(claim string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
}

// TestSetUpClaim: a claim's volume is its bound PersistentVolume's host
// directory (hostPath created if DirectoryOrCreate, local must exist),
// read-only with a readOnly claim; every other case is a SetUpError with
// the kubelet's wording.
func TestSetUpClaim(t *testing.T) {
	dir := t.TempDir()
	podsDir := filepath.Join(dir, "pods")
	created, local, file := filepath.Join(dir, "pv", "created"), filepath.Join(dir, "local"), filepath.Join(dir, "file")
	for _, err := range []error{os.MkdirAll(local, 0o755), os.MkdirAll(podsDir, 0o755), os.WriteFile(file, nil, 0o644),
		os.Symlink(podsDir, filepath.Join(dir, "link"))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	pending := boundClaim("pending", "")
	pending.Status.Phase = v1.ClaimPending
	unnamed := boundClaim("unnamed", "")
	deleting, protected := boundClaim("deleting", "pv-protected"), boundClaim("protected", "pv-protected")
	deleting.DeletionTimestamp, protected.DeletionTimestamp = &metav1.Time{}, &metav1.Time{}
	protected.Finalizers = []string{pvcProtectionFinalizer}
	unbound := claimedVolume("pv-unbound", "x", localPV(local))
	unbound.Spec.ClaimRef = nil
	block := claimedVolume("pv-block", "block", localPV(local))
	block.Spec.VolumeMode = ptr(v1.PersistentVolumeBlock)
	claims := &fakeClaims{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{
		"pv-host":      claimedVolume("pv-host", "host", hostPathPV(created)),
		"pv-local":     claimedVolume("pv-local", "local", localPV(local)),
		"pv-protected": claimedVolume("pv-protected", "protected", localPV(local)),
		"pv-other":     claimedVolume("pv-other", "someone-else", localPV(local)),
		"pv-unbound":   unbound,
		"pv-block":     block,
		"pv-missing":   claimedVolume("pv-missing", "missing", localPV(filepath.Join(dir, "nope"))),
		"pv-file":      claimedVolume("pv-file", "file", localPV(file)),
		"pv-nfs":       claimedVolume("pv-nfs", "nfs", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}),
		"pv-relative":  claimedVolume("pv-relative", "relative", localPV("data")),
		"pv-pods":      claimedVolume("pv-pods", "pods", hostPathPV(filepath.Join(podsDir, "uid", "volumes"))),
		"pv-link":      claimedVolume("pv-link", "link", localPV(filepath.Join(dir, "link"))),
	}}
	for _, c := range []*v1.PersistentVolumeClaim{pending, unnamed, deleting, protected, boundClaim("host", "pv-host"),
		boundClaim("local", "pv-local"), boundClaim("other", "pv-other"), boundClaim("x", "pv-unbound"), boundClaim("block", "pv-block"),
		boundClaim("missing", "pv-missing"), boundClaim("file", "pv-file"), boundClaim("nfs", "pv-nfs"), boundClaim("gone", "pv-gone"),
		boundClaim("relative", "pv-relative"), boundClaim("pods", "pv-pods"), boundClaim("link", "pv-link")} {
		claims.claims[c.Namespace+"/"+c.Name] = c
	}
	const failed = `MountVolume.SetUp failed for volume "data" : `
	tests := []struct {
		name  string
		vol   v1.Volume
		nilAP bool // no ClaimSource
		want  Volume
		err   string
	}{
		{"hostPath DirectoryOrCreate", claimVolume("host", false), false, Volume{HostPath: created}, ""},
		{"local", claimVolume("local", false), false, Volume{HostPath: local}, ""},
		{"read-only claim", claimVolume("local", true), false, Volume{HostPath: local, ReadOnly: true}, ""},
		{"deleting but protected", claimVolume("protected", false), false, Volume{HostPath: local}, ""},
		{"no API server", claimVolume("local", false), true, Volume{}, failed + "persistentVolumeClaim needs an API server"},
		{"claim not found", claimVolume("absent", false), false, Volume{},
			failed + `error processing PVC default/absent: failed to fetch PVC from API server: persistentvolumeclaims "absent" not found`},
		{"claim pending", claimVolume("pending", false), false, Volume{}, failed + "error processing PVC default/pending: PVC is not bound"},
		{"claim without volumeName", claimVolume("unnamed", false), false, Volume{}, "PVC has empty pvc.Spec.VolumeName"},
		{"claim being deleted", claimVolume("deleting", false), false, Volume{}, "PVC is being deleted"},
		{"volume not found", claimVolume("gone", false), false, Volume{}, `failed to fetch PV pv-gone from API server: persistentvolumes "pv-gone" not found`},
		{"volume without claimRef", claimVolume("x", false), false, Volume{}, "found PV object pv-unbound but it has a nil pv.Spec.ClaimRef"},
		{"volume of another claim", claimVolume("other", false), false, Volume{},
			"found PV object pv-other but its pv.Spec.ClaimRef default/someone-else (UID claim-someone-else) does not point to the claim (UID claim-other)"},
		{"block volume", claimVolume("block", false), false, Volume{}, `PersistentVolume "pv-block": volumeMode Block is not supported by skiff yet`},
		{"local path missing", claimVolume("missing", false), false, Volume{}, `PersistentVolume "pv-missing": local volume path: stat ` + filepath.Join(dir, "nope")},
		{"local path a file", claimVolume("file", false), false, Volume{}, "local volume path " + file + " is not a directory"},
		{"nfs", claimVolume("nfs", false), false, Volume{}, `PersistentVolume "pv-nfs": volume source not supported by skiff yet`},
		{"relative path", claimVolume("relative", false), false, Volume{}, `path "data" is not absolute`},
		{"path in the pods directory", claimVolume("pods", false), false, Volume{}, "lies in skiff's pods directory"},
		{"symlink to the pods directory", claimVolume("link", false), false, Volume{}, "lies in skiff's pods directory"},
	}
	// The errors of the claim and its binding, retried soon by the agent.
	notReady := map[string]bool{"claim not found": true, "claim pending": true, "claim without volumeName": true,
		"claim being deleted": true, "volume not found": true, "volume without claimRef": true, "volume of another claim": true}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{PodsDir: podsDir, Claims: claims}
			if tt.nilAP {
				cfg.Claims = nil
			}
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			vols, err := m.SetUp(context.Background(), volPod(fmt.Sprintf("uid-%d", i), tt.vol))
			if tt.err != "" {
				var se *SetUpError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("SetUp = %v, want a SetUpError containing %q", err, tt.err)
				}
				if errors.Is(err, ErrClaimNotReady) != notReady[tt.name] {
					t.Errorf("errors.Is(%v, ErrClaimNotReady) = %v", err, !notReady[tt.name])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if vols["data"] != tt.want {
				t.Errorf("volume = %+v, want %+v", vols["data"], tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(podsDir, "uid", "volumes")); err == nil {
		t.Errorf("a PersistentVolume in the pods directory was created")
	}
}

// TestClaimDataOutlivesPod: TearDown and CleanOrphans leave the
// PersistentVolume's directory and its files, also (as root) when a
// container pinned a subPath of it under the pod's directory.
func TestClaimDataOutlivesPod(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "pv")
	claims := &fakeClaims{
		claims:  map[string]*v1.PersistentVolumeClaim{"default/c": boundClaim("c", "pv")},
		volumes: map[string]*v1.PersistentVolume{"pv": claimedVolume("pv", "c", hostPathPV(data))},
	}
	m, err := New(Config{PodsDir: filepath.Join(dir, "pods"), Claims: claims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mps, _ := mountsUnder(mountInfoPath, m.cfg.PodsDir)
		for _, mp := range mps {
			_ = unmount(mp)
		}
	})
	for _, uid := range []types.UID{"torn-down", "orphan"} {
		vols, err := m.SetUp(context.Background(), volPod(string(uid), claimVolume("c", false)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(data, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "sub", string(uid)), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if rootTests() && os.Geteuid() == 0 {
			if _, err := m.SubPathMount(uid, "data", "app", 0, vols["data"].HostPath, "sub"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.TearDown(context.Background(), "torn-down"); err != nil {
		t.Fatal(err)
	}
	// "orphan" was set up by an earlier agent: a new Manager cleans it.
	m2, _ := New(Config{PodsDir: m.cfg.PodsDir})
	if err := m2.CleanOrphans(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"torn-down", "orphan"} {
		if b, err := os.ReadFile(filepath.Join(data, "sub", name)); err != nil || string(b) != "keep" {
			t.Errorf("the volume's file %s after the pod went: %q, %v", name, b, err)
		}
	}
	if entries, _ := os.ReadDir(m.cfg.PodsDir); len(entries) != 0 {
		t.Errorf("pod directories left: %v", entries)
	}
}
