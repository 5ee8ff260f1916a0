package localpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func claim(mode *corev1.PersistentVolumeMode, size string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "data-db-0"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  mode,
		},
	}
	if size != "" {
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	}
	return c
}

func TestProvision(t *testing.T) {
	dir := t.TempDir()
	p := provisioner{dir: dir, nodeName: "node-a"}
	retain := corev1.PersistentVolumeReclaimRetain
	block := corev1.PersistentVolumeBlock
	tests := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		class   *storagev1.StorageClass
		wantErr string
		reclaim corev1.PersistentVolumeReclaimPolicy
	}{
		{name: "default class", claim: claim(nil, "1Gi"), class: DefaultClass(), reclaim: corev1.PersistentVolumeReclaimDelete},
		{name: "retain", claim: claim(nil, "1Gi"), class: &storagev1.StorageClass{ReclaimPolicy: &retain}, reclaim: retain},
		{name: "block refused", claim: claim(&block, "1Gi"), class: DefaultClass(), wantErr: "volumeMode Block"},
		{name: "no size", claim: claim(nil, ""), class: DefaultClass(), wantErr: "requests.storage"},
		{name: "mount options refused", claim: claim(nil, "1Gi"), class: &storagev1.StorageClass{MountOptions: []string{"noatime"}}, wantErr: "mountOptions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, state, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: tt.class, PVName: "pvc-1", PVC: tt.claim})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || state != controller.ProvisioningFinished {
					t.Fatalf("Provision = %v, %v; want a final error with %q", state, err, tt.wantErr)
				}
				return
			}
			if err != nil || state != controller.ProvisioningFinished {
				t.Fatalf("Provision = %v, %v", state, err)
			}
			if pv.Name != "pvc-1" {
				t.Errorf("name = %q, want the library's pvc-1", pv.Name)
			}
			want := filepath.Join(dir, "pvc-1_apps_data-db-0")
			if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want {
				t.Fatalf("hostPath = %+v, want %s", pv.Spec.HostPath, want)
			}
			info, err := os.Stat(want)
			if err != nil || info.Mode().Perm() != dirMode {
				t.Fatalf("directory: %v, %v; want mode %o", info, err, dirMode)
			}
			if pv.Spec.PersistentVolumeReclaimPolicy != tt.reclaim {
				t.Errorf("reclaim policy = %s, want %s", pv.Spec.PersistentVolumeReclaimPolicy, tt.reclaim)
			}
			if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "1Gi" {
				t.Errorf("capacity = %s", got.String())
			}
			terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
			if len(terms) != 1 || terms[0].MatchExpressions[0].Values[0] != "node-a" {
				t.Errorf("node affinity = %+v", terms)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	dir := t.TempDir()
	p := provisioner{dir: dir, nodeName: "node-a"}
	pv, _, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: DefaultClass(), PVName: "pvc-1", PVC: claim(nil, "1Gi")})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pv.Spec.HostPath.Path, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, path := range []string{outside, dir, filepath.Join(dir, "pvc-2_apps_x"), dir + "/pvc-1_a/../../" + filepath.Base(outside)} {
		other := pv.DeepCopy()
		other.Spec.HostPath.Path = path
		if err := p.Delete(context.Background(), other); err == nil {
			t.Errorf("Delete of hostPath %s: no error", path)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("a refused Delete removed %s: %v", outside, err)
	}
	if err := p.Delete(context.Background(), pv); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pv.Spec.HostPath.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("volume directory still there: %v", err)
	}
	if err := p.Delete(context.Background(), pv); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Dir: "/var/lib/skiff/storage", NodeName: "n"}, true},
		{Config{Dir: "storage", NodeName: "n"}, false},
		{Config{Dir: "/var/lib/skiff/storage"}, false},
	} {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v", tt.cfg, err)
		}
	}
}

// TestProvisionDoesNotFollowLinks: a symbolic link planted where a
// volume's directory goes is refused, and its target left as it was.
func TestProvisionDoesNotFollowLinks(t *testing.T) {
	dir, target := t.TempDir(), t.TempDir()
	if err := os.Chmod(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "pvc-1_apps_data-db-0")); err != nil {
		t.Fatal(err)
	}
	p := provisioner{dir: dir, nodeName: "node-a"}
	_, _, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: DefaultClass(), PVName: "pvc-1", PVC: claim(nil, "1Gi")})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Provision over a link: %v", err)
	}
	if info, err := os.Stat(target); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("link target: %v, %v; want mode 700 kept", info, err)
	}
}

func TestVolumeDirName(t *testing.T) {
	long := strings.Repeat("c", 253)
	name := volumeDirName("pvc-1", "ns", long)
	if len(name) != maxNameBytes || !strings.HasPrefix(name, "pvc-1_ns_ccc") {
		t.Errorf("volumeDirName of a 253-byte claim = %d bytes %q...", len(name), name[:12])
	}
	if got := volumeDirName("pvc-1", "ns", "data"); got != "pvc-1_ns_data" {
		t.Errorf("volumeDirName = %q", got)
	}
}
