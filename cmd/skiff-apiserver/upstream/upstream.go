package upstream

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	batchv1internal "k8s.io/kubernetes/pkg/apis/batch/v1"
	"k8s.io/kubernetes/pkg/controller/cronjob"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/features"

	"github.com/skiffnode/skiff/shim/scheme"
	"github.com/skiffnode/skiff/shim/server"
)

// The controllers' workers: kube-controller-manager's defaults
// (--concurrent-job-syncs, --concurrent-cron-job-syncs).
const (
	jobWorkers     = 5
	cronJobWorkers = 5
)

// Add makes o serve upstream's kinds (batch/v1 Jobs and CronJobs) and run
// upstream's controllers (the Job and CronJob controllers), and registers upstream's defaulting
// of those kinds in the shim's scheme, which the shim's decoders apply.
// Call it once, before server.New.
func Add(o *server.Options) error {
	c := converter{scheme: runtime.NewScheme()}
	if err := addBatchToScheme(c.scheme); err != nil {
		return fmt.Errorf("upstream scheme: %w", err)
	}
	if err := batchv1internal.RegisterDefaults(scheme.Scheme); err != nil {
		return fmt.Errorf("batch defaults: %w", err)
	}
	o.Kinds = append(o.Kinds, jobs(c), cronJobs(c))
	prev := o.Controllers
	o.Controllers = func(cc server.ControllerContext) ([]func(context.Context), error) {
		var runs []func(context.Context)
		if prev != nil {
			more, err := prev(cc)
			if err != nil {
				return nil, err
			}
			runs = append(runs, more...)
		}
		// With WorkloadWithJob the Job controller waits for Workload and
		// PodGroup informers, which need kinds skiff-apiserver does not serve.
		if utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob) {
			return nil, fmt.Errorf("feature gate %s: scheduling.k8s.io Workloads and PodGroups are not served", features.WorkloadWithJob)
		}
		jc, err := job.NewController(context.Background(), cc.Client, cc.Informers.Core().V1().Pods(), cc.Informers.Batch().V1().Jobs(), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("job controller: %w", err)
		}
		cjc, err := cronjob.NewControllerV2(context.Background(), cc.Informers.Batch().V1().Jobs(), cc.Informers.Batch().V1().CronJobs(), cc.Client)
		if err != nil {
			return nil, fmt.Errorf("cronjob controller: %w", err)
		}
		return append(runs,
			func(ctx context.Context) { jc.Run(ctx, jobWorkers) },
			func(ctx context.Context) { cjc.Run(ctx, cronJobWorkers) }), nil
	}
	return nil
}
