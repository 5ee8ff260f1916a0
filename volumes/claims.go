package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ClaimSource reads what a persistentVolumeClaim volume needs from the API
// server: the pod's claim and the PersistentVolume bound to it (the API
// source reads each with one GET per set-up). Both block on an API call,
// bounded by ctx and by the implementation's own timeout; a missing object
// is an error. Safe for concurrent use.
type ClaimSource interface {
	PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// ErrClaimNotReady is wrapped by the set-up error of a claim that is not
// bound (yet) to a volume naming it: missing, Pending, or its volume not
// yet bound back. Binding is not signalled to the node, so callers retry
// those soon (the kubelet's volume manager, on its next pass).
var ErrClaimNotReady = errors.New("claim not bound yet")

// notReady is an error that is also ErrClaimNotReady, with err's message.
type notReady struct{ error }

func (e notReady) Is(target error) bool { return target == ErrClaimNotReady }
func (e notReady) Unwrap() error        { return e.error }

// pvcProtectionFinalizer is upstream's PVC protection finalizer: a claim
// being deleted that still has it is in use and may be mounted.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// setUpClaim resolves a persistentVolumeClaim volume to the host directory
// of its bound PersistentVolume (hostPath or local) and returns it as
// containers mount it: read-only when the volume says readOnly (neither
// source has a readOnly of its own). Like a hostPath volume it has no
// directory under the pod's, its ownership is not changed (no fsGroup)
// and TearDown never touches it: the data outlives the pod. Errors are the
// kubelet's ("error processing PVC ns/name: PVC is not bound"); SetUp's
// caller retries them as any FailedMount, those of the claim and its
// binding (ErrClaimNotReady) sooner.
func (m *Manager) setUpClaim(ctx context.Context, pod *v1.Pod, src *v1.PersistentVolumeClaimVolumeSource) (Volume, error) {
	if m.cfg.Claims == nil {
		return Volume{}, errors.New("persistentVolumeClaim needs an API server")
	}
	pv, err := m.boundVolume(ctx, pod.Namespace, src.ClaimName)
	if err != nil {
		return Volume{}, notReady{fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, src.ClaimName, err)}
	}
	path, err := m.persistentVolumePath(pv)
	if err != nil {
		return Volume{}, fmt.Errorf("PersistentVolume %q: %w", pv.Name, err)
	}
	return Volume{HostPath: path, ReadOnly: src.ReadOnly}, nil
}

// boundVolume reads claim namespace/name and the PersistentVolume bound
// to it, with the kubelet's checks (its getPVCExtractPV and getPVSpec):
// the claim Bound, not being deleted unprotected, naming a volume whose
// claimRef is this claim.
func (m *Manager) boundVolume(ctx context.Context, namespace, name string) (*v1.PersistentVolume, error) {
	pvc, err := m.cfg.Claims.PersistentVolumeClaim(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PVC from API server: %w", err)
	}
	switch {
	case pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer):
		return nil, errors.New("PVC is being deleted")
	case pvc.Status.Phase != v1.ClaimBound:
		return nil, errors.New("PVC is not bound")
	case pvc.Spec.VolumeName == "":
		return nil, errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	pvName := pvc.Spec.VolumeName
	pv, err := m.cfg.Claims.PersistentVolume(ctx, pvName)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PV %s from API server: %w", pvName, err)
	}
	ref := pv.Spec.ClaimRef
	switch {
	case ref == nil:
		return nil, fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pvName)
	case ref.UID != pvc.UID || ref.Namespace != namespace || ref.Name != name:
		return nil, fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef %s/%s (UID %s) does not point to the claim (UID %s)",
			pvName, ref.Namespace, ref.Name, ref.UID, pvc.UID)
	}
	return pv, nil
}

// persistentVolumePath is the host directory of pv: a hostPath's after the
// kubelet's type check (DirectoryOrCreate creates it), a local one's,
// which must exist and be a directory. Other sources, block volumes and
// mount options are not supported. The directory must lie outside the
// pods directory, whose content TearDown and CleanOrphans remove.
func (m *Manager) persistentVolumePath(pv *v1.PersistentVolume) (string, error) {
	spec := &pv.Spec
	if spec.VolumeMode != nil && *spec.VolumeMode == v1.PersistentVolumeBlock {
		return "", errors.New("volumeMode Block is not supported by skiff yet")
	}
	if len(spec.MountOptions) > 0 {
		return "", errors.New("mountOptions are not supported by skiff yet")
	}
	var path string
	switch {
	case spec.HostPath != nil:
		path = spec.HostPath.Path
	case spec.Local != nil:
		path = spec.Local.Path
	default:
		return "", errors.New("volume source not supported by skiff yet (hostPath and local are)")
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q is not absolute", path)
	}
	if err := m.outsidePodsDir(path); err != nil {
		return "", err
	}
	if spec.HostPath != nil {
		if err := checkHostPath(path, spec.HostPath.Type); err != nil {
			return "", err
		}
	} else if info, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("local volume path: %w", err)
	} else if !info.IsDir() {
		return "", fmt.Errorf("local volume path %s is not a directory", path)
	}
	// Again once it exists: a symlink on the way may lead into the pods
	// directory.
	return path, m.outsidePodsDir(path)
}

// outsidePodsDir refuses path when it is the pods directory or lies in it,
// as written or, where it exists, with its symlinks resolved.
func (m *Manager) outsidePodsDir(path string) error {
	pods := filepath.Clean(m.cfg.PodsDir)
	candidates := [][2]string{{filepath.Clean(path), pods}}
	resolvedPods, podsErr := filepath.EvalSymlinks(pods)
	if resolved, err := filepath.EvalSymlinks(path); err == nil && podsErr == nil {
		candidates = append(candidates, [2]string{resolved, resolvedPods})
	}
	for _, c := range candidates {
		if rel, err := filepath.Rel(c[1], c[0]); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return fmt.Errorf("path %s lies in skiff's pods directory %s, whose content skiff removes", path, pods)
		}
	}
	return nil
}
