package images

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of the kubelet's image GC flags (checklist F.1, F.3).
const (
	DefaultGCPeriod             = 5 * time.Minute
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
)

// Event reasons of the image GC, as the kubelet records them on the Node.
const (
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// GCPolicy is the kubelet's image GC policy: the band of disk usage the GC
// keeps the image filesystem in, and the ages that protect or expire an
// image.
type GCPolicy struct {
	// HighThresholdPercent: at or above this disk usage the GC frees space
	// (--image-gc-high-threshold; 100 never frees for space).
	HighThresholdPercent int
	// LowThresholdPercent is the usage the GC frees down to
	// (--image-gc-low-threshold).
	LowThresholdPercent int
	// MinAge: an image detected more recently is never removed
	// (--image-minimum-gc-age).
	MinAge time.Duration
	// MaxAge: an unused image not used for longer is removed whatever the
	// disk usage (--image-maximum-gc-age; 0: off).
	MaxAge time.Duration
}

// DefaultGCPolicy is the kubelet's default policy.
func DefaultGCPolicy() GCPolicy {
	return GCPolicy{
		HighThresholdPercent: DefaultHighThresholdPercent,
		LowThresholdPercent:  DefaultLowThresholdPercent,
		MinAge:               DefaultMinAge,
	}
}

// Validate checks p as the kubelet validates its configuration, with the
// kubelet's messages. Pure.
func (p GCPolicy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) %v must be between 0 and 100, inclusive", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be between 0 and 100, inclusive", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) %v must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %v", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("invalid configuration: imageMinimumGCAge %v must not be negative", p.MinAge))
	}
	if p.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("invalid configuration: imageMaximumGCAge %v must not be negative", p.MaxAge))
	}
	if p.MaxAge > 0 && p.MaxAge <= p.MinAge {
		errs = append(errs, fmt.Errorf("invalid configuration: imageMaximumGCAge %v must be greater than imageMinimumGCAge %v", p.MaxAge, p.MinAge))
	}
	return errors.Join(errs...)
}

// Enabled reports whether the GC may remove anything: the kubelet stubs
// its image GC out when the high threshold is 100 and there is no maximum
// age. Pure.
func (p GCPolicy) Enabled() bool {
	return p.HighThresholdPercent < 100 || p.MaxAge > 0
}

// FsStats are a filesystem's size and the bytes available to unprivileged
// users, as statfs reports them.
type FsStats struct {
	Capacity, Available uint64
}

// StatFS reports the filesystem holding path (a port: tests fake it).
type StatFS func(path string) (FsStats, error)

// Statfs is the real StatFS (statfs(2)). Safe for concurrent use.
func Statfs(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return FsStats{Capacity: st.Blocks * bsize, Available: st.Bavail * bsize}, nil
}
