package volumes

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// SizeViolation is a disk emptyDir whose usage exceeds its sizeLimit.
type SizeViolation struct {
	Volume string
	Limit  resource.Quantity
	Used   int64
}

// Message is the kubelet's eviction message for it.
func (v *SizeViolation) Message() string {
	return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Volume, v.Limit.String())
}

// HasSizeLimits reports whether pod has a disk emptyDir with a sizeLimit
// (the only volumes CheckSizeLimits measures). Pure.
func HasSizeLimits(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if limitedEmptyDir(&pod.Spec.Volumes[i]) != nil {
			return true
		}
	}
	return false
}

func limitedEmptyDir(v *v1.Volume) *resource.Quantity {
	ed := v.EmptyDir
	if ed == nil || ed.Medium != v1.StorageMediumDefault || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
		return nil
	}
	return ed.SizeLimit
}

// CheckSizeLimits measures each disk emptyDir of pod that has a sizeLimit
// (the blocks its files use, as du counts them, each inode once, not
// crossing into other mounts) and returns the first one over its limit, or
// nil. A Memory emptyDir needs no check: its tmpfs is sized to the limit.
// Blocking (walks the directories); safe for concurrent use.
func (m *Manager) CheckSizeLimits(pod *v1.Pod) (*SizeViolation, error) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		limit := limitedEmptyDir(v)
		if limit == nil {
			continue
		}
		used, err := diskUsage(m.volumeDir(pod.UID, PluginEmptyDir, v.Name))
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		if used > limit.Value() {
			return &SizeViolation{Volume: v.Name, Limit: limit.DeepCopy(), Used: used}, nil
		}
	}
	return nil, nil
}

// diskUsage sums the allocated bytes under dir. Files vanishing during the
// walk are skipped.
func diskUsage(dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	var rootDev uint64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if path == dir {
			rootDev = st.Dev
		} else if st.Dev != rootDev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		key := inode{st.Dev, st.Ino}
		if !seen[key] {
			seen[key] = true
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
