package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// gcOptions are the garbage collection and log rotation flags, with the
// kubelet's names and defaults (checklist F.1-F.9).
type gcOptions struct {
	image              images.GCPolicy
	imageGCPeriod      time.Duration
	container          agent.ContainerGCPolicy
	containerGCPeriod  time.Duration
	logMaxSize         string
	logMaxFiles        int
	logMaxWorkers      int
	logMonitorInterval time.Duration
}

// addGCFlags registers the GC and log rotation flags on f.
func addGCFlags(f *pflag.FlagSet, o *gcOptions) {
	f.IntVar(&o.image.HighThresholdPercent, "image-gc-high-threshold", images.DefaultHighThresholdPercent, "percent of image filesystem usage at or above which image garbage collection runs (100: never for disk space)")
	f.IntVar(&o.image.LowThresholdPercent, "image-gc-low-threshold", images.DefaultLowThresholdPercent, "percent of image filesystem usage image garbage collection frees down to; must be less than --image-gc-high-threshold")
	f.DurationVar(&o.image.MinAge, "image-minimum-gc-age", images.DefaultMinAge, "minimum age of an unused image before it is garbage collected")
	f.DurationVar(&o.image.MaxAge, "image-maximum-gc-age", 0, "unused images not used for longer are garbage collected whatever the disk usage (0: never)")
	f.DurationVar(&o.imageGCPeriod, "image-gc-period", images.DefaultGCPeriod, "period of image garbage collection (for tests)")
	f.DurationVar(&o.container.MinAge, "minimum-container-ttl-duration", 0, "minimum age of a dead container before it is garbage collected")
	f.IntVar(&o.container.MaxPerPodContainer, "maximum-dead-containers-per-container", 1, "dead instances kept per container of a pod (< 0: no limit); the newest is always kept while its pod exists")
	f.IntVar(&o.container.MaxContainers, "maximum-dead-containers", -1, "dead containers kept on the node in all (< 0: no limit)")
	f.DurationVar(&o.containerGCPeriod, "container-gc-period", agent.DefaultContainerGCPeriod, "period of container garbage collection (for tests)")
	f.StringVar(&o.logMaxSize, "container-log-max-size", podlogs.DefaultMaxSize, "size at which a container log is rotated, e.g. 10Mi")
	f.IntVar(&o.logMaxFiles, "container-log-max-files", podlogs.DefaultMaxFiles, "most log files kept per container, the current one included (at least 2)")
	f.IntVar(&o.logMaxWorkers, "container-log-max-workers", podlogs.DefaultMaxWorkers, "container logs checked and rotated at once")
	f.DurationVar(&o.logMonitorInterval, "container-log-monitor-interval", podlogs.DefaultMonitorInterval, "how often container logs are checked for rotation (at least 3s)")
	for _, hidden := range []string{"image-gc-period", "container-gc-period"} {
		_ = f.MarkHidden(hidden)
	}
}

// validate checks the flags as the kubelet validates their configuration.
func (o *gcOptions) validate() error {
	var errs []error
	if err := o.image.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.imageGCPeriod <= 0 || o.containerGCPeriod <= 0 {
		errs = append(errs, errors.New("--image-gc-period and --container-gc-period must be positive"))
	}
	if _, err := podlogs.ParseMaxSize(o.logMaxSize); err != nil {
		errs = append(errs, fmt.Errorf("--container-log-max-size: %w", err))
	}
	if o.logMaxFiles <= 1 {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMaxFiles (--container-log-max-files) %d must be greater than 1", o.logMaxFiles))
	}
	if o.logMaxWorkers < 1 {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMaxWorkers (--container-log-max-workers) %d must be greater than or equal to 1", o.logMaxWorkers))
	}
	if o.logMonitorInterval < podlogs.MinMonitorInterval {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMonitorInterval (--container-log-monitor-interval) %v must be a positive time duration greater than or equal to %v", o.logMonitorInterval, podlogs.MinMonitorInterval))
	}
	return errors.Join(errs...)
}

// gcLoops builds the image GC and the log rotator; run runs them until
// ctx is done (the caller owns and waits for it). keep are images never
// removed (the sandbox image).
func (o *gcOptions) gcLoops(rt runtime.Runtime, keep []string, nodeEvent func(typ, reason, msg string), log *slog.Logger) (imageGC *images.GC, run func(context.Context), err error) {
	imageGC, err = images.NewGC(images.GCConfig{
		Runtime: rt, Policy: o.image, Period: o.imageGCPeriod, KeepImages: keep,
		NodeEvent: nodeEvent, Logger: log.With("component", "image-gc"),
	})
	if err != nil {
		return nil, nil, err
	}
	maxSize, err := podlogs.ParseMaxSize(o.logMaxSize)
	if err != nil {
		return nil, nil, err
	}
	rotator, err := podlogs.NewRotator(podlogs.RotatorConfig{
		Runtime: agent.NewLogRotationRuntime(rt), MaxSize: maxSize, MaxFiles: o.logMaxFiles,
		MaxWorkers: o.logMaxWorkers, Interval: o.logMonitorInterval, Logger: log.With("component", "log-rotation"),
	})
	if err != nil {
		return nil, nil, err
	}
	run = func(ctx context.Context) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			rotator.Run(ctx)
		}()
		imageGC.Run(ctx)
		<-done
	}
	return imageGC, run, nil
}
