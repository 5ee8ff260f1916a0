// Package localpath is the one-node control plane's volume provisioner, in
// the manner of rancher's local-path-provisioner (k3s's default storage):
// a PersistentVolumeClaim of its StorageClass gets a PersistentVolume
// whose hostPath is a fresh directory under Config.Dir on the node, and
// the directory is removed when the volume is deleted under the Delete
// reclaim policy. It runs on the field's provisioning library
// (sigs.k8s.io/sig-storage-lib-external-provisioner), beside upstream's
// PersistentVolume controller (cmd/skiff-apiserver/upstream), which
// binds the claims and hands the provisioning of its class to it.
package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// Provisioner is the provisioner name the StorageClass names.
const Provisioner = "skiff.io/local-path"

// dirMode is the mode of a volume's directory: writable by any user, as
// local-path-provisioner's, since the pod's user is not known in advance.
const dirMode = 0o777

// provisioner creates and deletes volume directories under dir for the
// node nodeName. Safe for concurrent use (the library calls it from
// several workers).
type provisioner struct {
	dir      string
	nodeName string
}

var _ controller.Provisioner = provisioner{}

// Provision implements controller.Provisioner: a directory
// <dir>/<pv>_<namespace>_<claim> and a PersistentVolume of the claim's
// size and access modes, pinned to the node, whose hostPath it is.
func (p provisioner) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	claim := opts.PVC
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: volumeMode Block is not supported by %s", claim.Namespace, claim.Name, Provisioner)
	}
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: spec.resources.requests.storage is required", claim.Namespace, claim.Name)
	}
	if len(opts.StorageClass.MountOptions) > 0 {
		return nil, controller.ProvisioningFinished, fmt.Errorf("storage class %s: mountOptions are not supported by %s", opts.StorageClass.Name, Provisioner)
	}
	path := filepath.Join(p.dir, volumeDirName(opts.PVName, claim.Namespace, claim.Name))
	if err := makeVolumeDir(p.dir, path); err != nil {
		return nil, controller.ProvisioningNoChange, err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	hostPathType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &hostPathType},
			},
			NodeAffinity: nodeAffinity(p.nodeName),
		},
	}, controller.ProvisioningFinished, nil
}

// Delete implements controller.Provisioner: it removes the volume's
// directory, and refuses a volume whose hostPath is not one it made (a
// directory directly under dir).
func (p provisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return fmt.Errorf("persistentvolume %s: no hostPath, not made by %s", pv.Name, Provisioner)
	}
	path := filepath.Clean(pv.Spec.HostPath.Path)
	if filepath.Dir(path) != filepath.Clean(p.dir) || !strings.HasPrefix(filepath.Base(path), pv.Name+"_") {
		return fmt.Errorf("persistentvolume %s: hostPath %s is not a volume directory of %s under %s", pv.Name, path, Provisioner, p.dir)
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove volume directory: %w", err)
	}
	return nil
}

// maxNameBytes is the longest file name Linux file systems take.
const maxNameBytes = 255

// volumeDirName is a volume's directory name, <pv>_<namespace>_<claim>
// (local-path-provisioner's), cut to maxNameBytes (API names are ASCII):
// it always starts with "<pv>_", which Delete checks.
func volumeDirName(pv, namespace, claim string) string {
	name := strings.Join([]string{pv, namespace, claim}, "_")
	return name[:min(len(name), maxNameBytes)]
}

// makeVolumeDir makes dir (0755, unless it exists) and the volume
// directory path in it, mode dirMode whatever the umask. An existing path
// must be a directory, not a symbolic link: it is not followed.
func makeVolumeDir(dir, path string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storage directory: %w", err)
	}
	if err := os.Mkdir(path, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create volume directory: %w", err)
	}
	info, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("volume directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("volume directory %s exists and is not a directory (%s)", path, info.Mode().Type())
	}
	if err := os.Chmod(path, dirMode); err != nil {
		return fmt.Errorf("volume directory: %w", err)
	}
	return nil
}

// nodeAffinity pins a volume to the node named node.
func nodeAffinity(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}},
		}},
	}}
}
