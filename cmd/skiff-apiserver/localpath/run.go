package localpath

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/skiffnode/skiff/shim/server"
)

// DefaultClassName is the StorageClass the provisioner serves, made the
// cluster's default (k3s's name for the same).
const DefaultClassName = "local-path"

// defaultClassAnnotation marks the default StorageClass, which
// upstream's PersistentVolume controller gives claims that name none.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// classRetry bounds the waits between attempts to create the class.
var classRetry = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8, Cap: 30 * time.Second}

// Config is what the provisioner needs.
type Config struct {
	// Dir holds the volumes' directories, on the node. Required.
	Dir string
	// NodeName is the node the volumes are pinned to. Required.
	NodeName string
}

// Runs returns the provisioner's runs for the shim's controllers: one
// that makes DefaultClassName (the default StorageClass, binding
// Immediate: on one node the pod's node is known) unless a class of that
// name exists, and the provisioning controller on the shim's shared
// informers, which returns once its workers did (the library's event
// broadcaster, started by its constructor, ends with the process). cfg
// must be valid (Config.Validate).
func Runs(cc server.ControllerContext, cfg Config) []func(context.Context) {
	core := cc.Informers.Core().V1()
	ctrl := controller.NewProvisionController(context.Background(), cc.Client, Provisioner,
		provisioner{dir: cfg.Dir, nodeName: cfg.NodeName},
		controller.LeaderElection(false),
		controller.AddFinalizer(true),
		controller.ClaimsInformer(core.PersistentVolumeClaims().Informer()),
		controller.VolumesInformer(core.PersistentVolumes().Informer()),
		controller.ClassesInformer(cc.Informers.Storage().V1().StorageClasses().Informer()),
	)
	var workers sync.WaitGroup
	ctrl.ControllerWaitGroup(&workers)
	return []func(context.Context){
		func(ctx context.Context) { ensureClass(ctx, cc.Client) },
		func(ctx context.Context) {
			ctrl.Run(ctx)
			workers.Wait()
		},
	}
}

// Validate checks cfg: both fields set, Dir absolute.
func (cfg Config) Validate() error {
	if cfg.NodeName == "" {
		return errors.New("local-path provisioner: its volumes need a node (--node-name)")
	}
	if !filepath.IsAbs(cfg.Dir) {
		return fmt.Errorf("local-path provisioner: directory %q: want an absolute path", cfg.Dir)
	}
	return nil
}

// DefaultClass is the StorageClass Runs makes.
func DefaultClass() *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultClassName,
			Annotations: map[string]string{defaultClassAnnotation: "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
}

// ensureClass creates DefaultClass unless a class of its name exists
// (a user's change or deletion is theirs until the next start), retrying
// while the API refuses, until ctx ends or classRetry is spent.
func ensureClass(ctx context.Context, client kubernetes.Interface) {
	err := wait.ExponentialBackoffWithContext(ctx, classRetry, func(ctx context.Context) (bool, error) {
		_, err := client.StorageV1().StorageClasses().Create(ctx, DefaultClass(), metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		klog.FromContext(ctx).Info("creating the default StorageClass", "class", DefaultClassName, "err", err)
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(fmt.Errorf("storage class %s: %w", DefaultClassName, err), "giving up")
	}
}
