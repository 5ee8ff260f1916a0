package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// gcOptions are the garbage collection and log rotation flags, with the
// kubelet's names and defaults (checklist F.1-F.9).
type GCConfig struct {
	Image              images.GCPolicy
	ImageGCPeriod      time.Duration
	Container          agent.ContainerGCPolicy
	ContainerGCPeriod  time.Duration
	LogMaxSize         string
	LogMaxFiles        int
	LogMaxWorkers      int
	LogMonitorInterval time.Duration
}

// validate checks the flags as the kubelet validates their configuration.
func (o *GCConfig) validate() error {
	var errs []error
	if err := o.Image.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.ImageGCPeriod <= 0 || o.ContainerGCPeriod <= 0 {
		errs = append(errs, errors.New("--image-gc-period and --container-gc-period must be positive"))
	}
	if _, err := podlogs.ParseMaxSize(o.LogMaxSize); err != nil {
		errs = append(errs, fmt.Errorf("--container-log-max-size: %w", err))
	}
	if o.LogMaxFiles <= 1 {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMaxFiles (--container-log-max-files) %d must be greater than 1", o.LogMaxFiles))
	}
	if o.LogMaxWorkers < 1 {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMaxWorkers (--container-log-max-workers) %d must be greater than or equal to 1", o.LogMaxWorkers))
	}
	if o.LogMonitorInterval < podlogs.MinMonitorInterval {
		errs = append(errs, fmt.Errorf("invalid configuration: containerLogMonitorInterval (--container-log-monitor-interval) %v must be a positive time duration greater than or equal to %v", o.LogMonitorInterval, podlogs.MinMonitorInterval))
	}
	return errors.Join(errs...)
}

// gcLoops builds the image GC and the log rotator; run runs them until
// ctx is done (the caller owns and waits for it). keep are images never
// removed (the sandbox image).
func (o *GCConfig) gcLoops(rt runtime.Runtime, keep []string, nodeEvent func(typ, reason, msg string), log *slog.Logger) (imageGC *images.GC, run func(context.Context), err error) {
	imageGC, err = images.NewGC(images.GCConfig{
		Runtime: rt, Policy: o.Image, Period: o.ImageGCPeriod, KeepImages: keep,
		NodeEvent: nodeEvent, Logger: log.With("component", "image-gc"),
	})
	if err != nil {
		return nil, nil, err
	}
	maxSize, err := podlogs.ParseMaxSize(o.LogMaxSize)
	if err != nil {
		return nil, nil, err
	}
	rotator, err := podlogs.NewRotator(podlogs.RotatorConfig{
		Runtime: agent.NewLogRotationRuntime(rt), MaxSize: maxSize, MaxFiles: o.LogMaxFiles,
		MaxWorkers: o.LogMaxWorkers, Interval: o.LogMonitorInterval, Logger: log.With("component", "log-rotation"),
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
