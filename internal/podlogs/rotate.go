package podlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
)

// Defaults of the kubelet's container log rotation settings.
const (
	DefaultMaxSize         = "10Mi" // --container-log-max-size
	DefaultMaxFiles        = 5      // --container-log-max-files
	DefaultMaxWorkers      = 1      // --container-log-max-workers
	DefaultMonitorInterval = 10 * time.Second
	// MinMonitorInterval is the kubelet's lower bound of the interval.
	MinMonitorInterval = 3 * time.Second
)

const (
	// rotatedTimeFormat is the suffix of a rotated log (<log>.<time>), the
	// kubelet's: it sorts as time does.
	rotatedTimeFormat = "20060102-150405"
	compressSuffix    = ".gz"
	tmpSuffix         = ".tmp"
)

// RunningLog is a running container and the absolute path of its log.
type RunningLog struct {
	ID, Path string
}

// RotateRuntime is what the rotator asks of the runtime.
type RotateRuntime interface {
	// RunningContainerLogs lists the running containers whose logs are
	// rotated. Blocking.
	RunningContainerLogs(ctx context.Context) ([]RunningLog, error)
	// ReopenContainerLog makes the runtime open a new log file at the
	// container's log path. Blocking.
	ReopenContainerLog(ctx context.Context, id string) error
}

// RotatorConfig wires a Rotator. Runtime is required.
type RotatorConfig struct {
	Runtime RotateRuntime
	// MaxSize is the size in bytes at which a log is rotated (see
	// ParseMaxSize).
	MaxSize int64
	// MaxFiles is the most files a container's log may have, the current
	// one included; at least 2.
	MaxFiles int
	// MaxWorkers bounds the containers checked at once (default 1).
	MaxWorkers int
	// Interval between checks (default DefaultMonitorInterval).
	Interval time.Duration
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

// Rotator rotates container logs as the kubelet's ContainerLogManager
// does: a running container's log over MaxSize is renamed to
// <log>.<timestamp> and the runtime reopens the log; older rotated files
// are compressed with gzip, the newest rotated one is left plain (the
// container may have written to it up to the reopen, a reader may still
// follow it), and the oldest go beyond MaxFiles. Create with NewRotator,
// then Run.
type Rotator struct {
	cfg RotatorConfig
	log *slog.Logger
}

// ParseMaxSize parses a --container-log-max-size quantity ("10Mi") into
// bytes; it must be positive.
func ParseMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("container log max size %q: %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("container log max size %q: must be a positive number of bytes", s)
	}
	return n, nil
}

// NewRotator checks cfg and returns a Rotator.
func NewRotator(cfg RotatorConfig) (*Rotator, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("podlogs: Rotator needs a Runtime")
	}
	if cfg.MaxFiles <= 1 {
		return nil, fmt.Errorf("invalid MaxFiles %d, must be > 1", cfg.MaxFiles)
	}
	if cfg.MaxSize <= 0 {
		return nil, fmt.Errorf("invalid MaxSize %d, must be > 0", cfg.MaxSize)
	}
	if cfg.MaxWorkers < 1 {
		cfg.MaxWorkers = DefaultMaxWorkers
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultMonitorInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Rotator{cfg: cfg, log: cfg.Logger}, nil
}

// Run checks the logs every Interval until ctx is done. Blocking; at
// steady state one listing and one stat per running container each
// Interval.
func (r *Rotator) Run(ctx context.Context) {
	t := r.cfg.Clock.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := r.RotateOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("failed to rotate container logs", "err", err)
		}
	}
}

// RotateOnce checks every running container's log once and rotates those
// over MaxSize, MaxWorkers at a time; it returns when all are done. A
// failure of one container is logged and does not stop the others; the
// error is the listing's. Not safe for concurrent use with itself.
func (r *Rotator) RotateOnce(ctx context.Context) error {
	logs, err := r.cfg.Runtime.RunningContainerLogs(ctx)
	if err != nil {
		return fmt.Errorf("list running containers: %w", err)
	}
	check := func(l RunningLog) {
		if err := r.check(ctx, l); err != nil {
			r.log.Error("failed to rotate log for container", "path", l.Path, "containerID", l.ID, "err", err)
		}
	}
	if r.cfg.MaxWorkers == 1 {
		// The default: no goroutine per container every interval.
		for _, l := range logs {
			check(l)
		}
		return nil
	}
	var g errgroup.Group
	g.SetLimit(r.cfg.MaxWorkers)
	for _, l := range logs {
		g.Go(func() error { check(l); return nil })
	}
	return g.Wait()
}

// check rotates one container's log if it is over MaxSize; a missing log
// is reopened (a rotation interrupted between rename and reopen). A log
// that is not a regular file (a symlink planted in the log directory) is
// an ErrNotRegular error and left alone.
func (r *Rotator) check(ctx context.Context, l RunningLog) error {
	info, err := checkRegular(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := r.cfg.Runtime.ReopenContainerLog(ctx, l.ID); err != nil {
			return fmt.Errorf("container log does not exist, reopen failed: %w", err)
		}
		info, err = checkRegular(l.Path)
	}
	if err != nil {
		return err
	}
	if info.Size() < r.cfg.MaxSize {
		return nil
	}
	return r.rotate(ctx, l.ID, l.Path)
}

// rotate is the kubelet's rotateLog: drop leftovers of an interrupted
// rotation, remove the oldest rotated files beyond MaxFiles-2 (the
// current log and the one rotated now are the other two), compress the
// remaining plain ones, then rename the current log and reopen it.
func (r *Rotator) rotate(ctx context.Context, id, path string) error {
	rotated, err := filepath.Glob(path + ".*")
	if err != nil {
		return err
	}
	rotated, err = removeUnused(rotated)
	if err != nil {
		return err
	}
	rotated, err = removeExcess(rotated, r.cfg.MaxFiles-2)
	if err != nil {
		return err
	}
	for _, f := range rotated {
		if strings.HasSuffix(f, compressSuffix) {
			continue
		}
		if err := compress(f); errors.Is(err, ErrNotRegular) {
			// Not a log the runtime wrote (a symlink planted in the log
			// directory): removed, never read.
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", f, err)
			}
		} else if err != nil {
			return err
		}
	}
	return r.rotateLatest(ctx, id, path)
}

// rotateLatest renames the current log to <log>.<timestamp> and has the
// runtime reopen it; if the reopen fails, the rename is undone.
func (r *Rotator) rotateLatest(ctx context.Context, id, path string) error {
	to := path + "." + r.cfg.Clock.Now().Format(rotatedTimeFormat)
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("rotated log %s exists already (rotated twice in a second)", to)
	}
	if err := os.Rename(path, to); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := r.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		if rerr := os.Rename(to, path); rerr != nil {
			r.log.Error("failed to rename rotated log back", "rotated", to, "log", path, "err", rerr)
		}
		return fmt.Errorf("reopen container log %s: %w", id, err)
	}
	return nil
}

// removeUnused removes temporary files and plain files that have a
// compressed copy (an interrupted compression) and returns the others.
func removeUnused(files []string) ([]string, error) {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	var keep []string
	for _, f := range files {
		unused := strings.HasSuffix(f, tmpSuffix) ||
			(!strings.HasSuffix(f, compressSuffix) && have[f+compressSuffix])
		if !unused {
			keep = append(keep, f)
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove unused log: %w", err)
		}
	}
	return keep, nil
}

// removeExcess removes the oldest files until at most keep remain (the
// names sort as their times), and returns the rest, oldest first.
func removeExcess(files []string, keep int) ([]string, error) {
	sort.Strings(files)
	keep = max(keep, 0)
	n := max(len(files)-keep, 0)
	for _, f := range files[:n] {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove old log: %w", err)
		}
	}
	return files[n:], nil
}

// compress gzips path into path.gz (through path.gz.tmp, renamed when
// complete) and removes path. A path that is not a regular file is not
// read (ErrNotRegular): a symlink is never followed out of the log
// directory.
func compress(path string) (retErr error) {
	in, err := openLog(path)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer in.Close()
	tmp := path + compressSuffix + tmpSuffix
	// Never through a symlink planted at tmp: removeUnused removed what
	// was there, so it is created anew.
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	defer func() {
		_ = out.Close()
		if retErr != nil {
			_ = os.Remove(tmp)
		}
	}()
	w := gzip.NewWriter(out)
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("compress log %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("compress log %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("compress log %s: %w", path, err)
	}
	if err := os.Rename(tmp, path+compressSuffix); err != nil {
		return fmt.Errorf("compress log: %w", err)
	}
	return os.Remove(path)
}

// RemoveContainerLogs removes a container's log file and its rotated
// siblings (<log>.<timestamp>[.gz]), as the kubelet's log manager Clean
// does. Idempotent.
func RemoveContainerLogs(path string) error {
	rotated, err := filepath.Glob(path + ".*")
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range append(rotated, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
