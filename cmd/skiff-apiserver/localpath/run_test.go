package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/servertest"
	"github.com/skiffnode/skiff/cmd/skiff-apiserver/upstream"
	"github.com/skiffnode/skiff/shim/server"
)

// startServer runs the shim with upstream's kinds and controllers and
// the provisioner for node "node-a" in dir, and returns an admin client.
func startServer(t *testing.T, dir string) kubernetes.Interface {
	t.Helper()
	o := server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1"}
	if err := upstream.Add(&o, upstream.Config{ServiceCIDR: upstream.DefaultServiceCIDR, NodePortRange: upstream.DefaultNodePortRange}); err != nil {
		t.Fatal(err)
	}
	build := o.Controllers
	o.Controllers = func(cc server.ControllerContext) ([]func(context.Context), error) {
		runs, err := build(cc)
		return append(runs, Runs(cc, Config{Dir: dir, NodeName: "node-a"})...), err
	}
	rc, _ := servertest.Start(context.Background(), t, o)
	return kubernetes.NewForConfigOrDie(rc)
}

// eventually polls cond every 100 ms until it holds or a minute passed.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClaimProvisionedAndDeleted: with the default class made at start, a
// claim naming no class gets it (upstream's PersistentVolume controller),
// a volume on a fresh directory and Bound; deleting the claim deletes the
// volume and its directory.
func TestClaimProvisionedAndDeleted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	client := startServer(t, dir)
	eventually(t, "default class", func() (bool, string) {
		sc, err := client.StorageV1().StorageClasses().Get(ctx, DefaultClassName, metav1.GetOptions{})
		return err == nil && sc.Annotations[defaultClassAnnotation] == "true", fmt.Sprint(err)
	})
	claims := client.CoreV1().PersistentVolumeClaims("default")
	_, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pv *corev1.PersistentVolume
	eventually(t, "claim bound", func() (bool, string) {
		c, err := claims.Get(ctx, "data", metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			return false, fmt.Sprintf("%v %+v", err, c.Status)
		}
		pv, err = client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		return err == nil && pv.Status.Phase == corev1.VolumeBound && c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == DefaultClassName,
			fmt.Sprintf("%v class %v", err, c.Spec.StorageClassName)
	})
	path := pv.Spec.HostPath.Path
	if filepath.Dir(path) != dir {
		t.Fatalf("volume %s: hostPath %s not under %s", pv.Name, path, dir)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "volume deleted", func() (bool, string) {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		_, statErr := os.Stat(path)
		return apierrors.IsNotFound(err) && errors.Is(statErr, fs.ErrNotExist), fmt.Sprintf("get: %v, directory: %v", err, statErr)
	})
}
