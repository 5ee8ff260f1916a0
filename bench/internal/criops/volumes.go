package criops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Volume is a floor pod's volume: a host directory the floor creates
// itself, with Files in it, and bind-mounts at ContainerPath into the
// containers that name it in Container.Mounts. No Files: an empty
// directory (an emptyDir). The floor writes plain files, not an agent's
// atomic-writer layout (timestamped directory, ..data symlink): that is
// the least work that gives the containers the same files.
type Volume struct {
	Name          string
	ContainerPath string
	ReadOnly      bool
	// Files maps a file name (no directories) to its content.
	Files map[string]string
}

// volumeDir is the host directory of pod p's volume name.
func (f *Floor) volumeDir(p Pod, name string) string {
	return filepath.Join(f.VolumeDir, p.UID, name)
}

// writeVolumes creates VolumeDir/<uid>/<volume>/ (0755) and each volume's
// files (0644). Idempotent: existing files are overwritten. On error what
// was written is removed again.
func (f *Floor) writeVolumes(p Pod) (err error) {
	if len(p.Volumes) == 0 {
		return nil
	}
	if f.VolumeDir == "" {
		return fmt.Errorf("floor pod %s has volumes but the floor no VolumeDir", p.Name)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.removeVolumes(p))
		}
	}()
	for _, v := range p.Volumes {
		dir := f.volumeDir(p, v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("floor pod %s volume %s: %w", p.Name, v.Name, err)
		}
		for name, data := range v.Files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				return fmt.Errorf("floor pod %s volume %s: %w", p.Name, v.Name, err)
			}
		}
	}
	return nil
}

// removeVolumes removes VolumeDir/<uid>; nothing there is no error.
func (f *Floor) removeVolumes(p Pod) error {
	if len(p.Volumes) == 0 || f.VolumeDir == "" {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(f.VolumeDir, p.UID)); err != nil {
		return fmt.Errorf("floor pod %s: remove volumes: %w", p.Name, err)
	}
	return nil
}

// mounts are the CRI mounts of c in pod p, in c.Mounts' order; an unknown
// volume name is an error.
func (f *Floor) mounts(p Pod, c Container) ([]*runtimeapi.Mount, error) {
	out := make([]*runtimeapi.Mount, 0, len(c.Mounts))
	for _, name := range c.Mounts {
		i := volumeIndex(p.Volumes, name)
		if i < 0 {
			return nil, fmt.Errorf("floor pod %s container %s mounts unknown volume %q", p.Name, c.Name, name)
		}
		v := p.Volumes[i]
		out = append(out, &runtimeapi.Mount{ContainerPath: v.ContainerPath, HostPath: f.volumeDir(p, name),
			Readonly: v.ReadOnly, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE})
	}
	return out, nil
}

func volumeIndex(vs []Volume, name string) int {
	for i, v := range vs {
		if v.Name == name {
			return i
		}
	}
	return -1
}
