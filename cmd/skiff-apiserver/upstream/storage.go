package upstream

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	corev1internal "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/storage"
	storagev1internal "k8s.io/kubernetes/pkg/apis/storage/v1"
	"k8s.io/kubernetes/pkg/controller/volume/persistentvolume"
	"k8s.io/kubernetes/pkg/controller/volume/pvcprotection"
	"k8s.io/kubernetes/pkg/controller/volume/pvprotection"
	pvregistry "k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	pvcregistry "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"

	"github.com/skiffnode/skiff/shim/registry/generic"
	"github.com/skiffnode/skiff/shim/server"
)

// kube-controller-manager's defaults: --pvclaimbinder-sync-period, and one
// worker each for the PVC and PV protection controllers.
const (
	volumeSyncPeriod  = 15 * time.Second
	protectionWorkers = 1
)

// addStorageToScheme registers storage's internal types and the v1
// conversions in s.
func addStorageToScheme(s *runtime.Scheme) error {
	if err := storage.AddToScheme(s); err != nil {
		return err
	}
	return storagev1internal.AddToScheme(s)
}

// addVolumeDefaults registers upstream's defaulting of
// PersistentVolumeClaims, PersistentVolumes and StorageClasses in s (the
// shim's scheme).
func addVolumeDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeClaim{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim))
	})
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeClaimList{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolumeClaimList(obj.(*corev1.PersistentVolumeClaimList))
	})
	s.AddTypeDefaultingFunc(&corev1.PersistentVolume{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolume(obj.(*corev1.PersistentVolume))
	})
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeList{}, func(obj any) {
		corev1internal.SetObjectDefaults_PersistentVolumeList(obj.(*corev1.PersistentVolumeList))
	})
	if err := storagev1internal.RegisterDefaults(s); err != nil {
		return fmt.Errorf("storage defaults: %w", err)
	}
	return nil
}

// persistentVolumeClaims is core/v1 PersistentVolumeClaims with upstream's
// strategy; upstream's PersistentVolume controller binds them.
func persistentVolumeClaims(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true,
		New:        func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:    func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		ShortNames: []string{"pvc"},
		Status:     true,
	}, pvcregistry.Strategy, pvcregistry.StatusStrategy)
}

// persistentVolumes is core/v1 PersistentVolumes (cluster-scoped) with
// upstream's strategy.
func persistentVolumes(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Version: "v1", Resource: "persistentvolumes", Singular: "persistentvolume",
		New:        func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:    func() runtime.Object { return &corev1.PersistentVolumeList{} },
		ShortNames: []string{"pv"},
		Status:     true,
	}, pvregistry.Strategy, pvregistry.StatusStrategy)
}

// storageClasses is storage.k8s.io/v1 StorageClasses with upstream's
// strategy.
func storageClasses(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: storagev1.GroupName, Version: "v1", Resource: "storageclasses", Singular: "storageclass",
		New:        func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:    func() runtime.Object { return &storagev1.StorageClassList{} },
		ShortNames: []string{"sc"},
	}, storageclass.Strategy, nil)
}

// volumeControllers builds upstream's PersistentVolume controller (binding,
// the default class of class-less claims, dynamic provisioning through
// external provisioners such as cmd/skiff-apiserver/localpath) with no
// in-tree volume plugins, and the PVC and PV protection controllers (the
// kubernetes.io/pvc-protection and pv-protection finalizers: a claim a pod
// uses, or a bound volume, is deleted only when no longer in use).
func volumeControllers(cc server.ControllerContext) ([]func(context.Context), error) {
	core := cc.Informers.Core().V1()
	pvc, err := persistentvolume.NewController(context.Background(), persistentvolume.ControllerParameters{
		KubeClient:                cc.Client,
		SyncPeriod:                volumeSyncPeriod,
		VolumeInformer:            core.PersistentVolumes(),
		ClaimInformer:             core.PersistentVolumeClaims(),
		ClassInformer:             cc.Informers.Storage().V1().StorageClasses(),
		PodInformer:               core.Pods(),
		NodeInformer:              core.Nodes(),
		EnableDynamicProvisioning: true,
	})
	if err != nil {
		return nil, fmt.Errorf("persistentvolume controller: %w", err)
	}
	logger := klog.Background()
	claims, err := pvcprotection.NewPVCProtectionController(logger, core.PersistentVolumeClaims(), core.Pods(), cc.Client)
	if err != nil {
		return nil, fmt.Errorf("pvc protection controller: %w", err)
	}
	volumes, err := pvprotection.NewPVProtectionController(logger, core.PersistentVolumes(), cc.Client)
	if err != nil {
		return nil, fmt.Errorf("pv protection controller: %w", err)
	}
	return []func(context.Context){
		pvc.Run,
		func(ctx context.Context) { claims.Run(ctx, protectionWorkers) },
		func(ctx context.Context) { volumes.Run(ctx, protectionWorkers) },
	}, nil
}
