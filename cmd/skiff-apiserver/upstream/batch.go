package upstream

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchv1internal "k8s.io/kubernetes/pkg/apis/batch/v1"
	cronjobregistry "k8s.io/kubernetes/pkg/registry/batch/cronjob"
	jobregistry "k8s.io/kubernetes/pkg/registry/batch/job"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// addBatchToScheme registers batch's internal types and the v1
// conversions and defaults in s.
func addBatchToScheme(s *runtime.Scheme) error {
	if err := batch.AddToScheme(s); err != nil {
		return err
	}
	return batchv1internal.AddToScheme(s)
}

// jobs is batch/v1 Jobs with upstream's job strategy: the generated
// selector and labels, validation, immutable fields, warnings, and
// orphaned pods on a delete without a propagation policy (upstream's
// batch/v1 compatibility).
func jobs(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: batchv1.GroupName, Version: "v1", Resource: "jobs", Singular: "job", Namespaced: true,
		New:             func() runtime.Object { return &batchv1.Job{} },
		NewList:         func() runtime.Object { return &batchv1.JobList{} },
		Categories:      []string{"all"},
		Status:          true,
		OrphanByDefault: true,
	}, jobregistry.Strategy, jobregistry.StatusStrategy)
}

// cronJobs is batch/v1 CronJobs with upstream's cronjob strategy
// (schedule and time zone validation, generation, status reset); their
// Jobs are deleted with them by default.
func cronJobs(c converter) *generic.Kind {
	return c.withStrategy(&generic.Kind{
		Group: batchv1.GroupName, Version: "v1", Resource: "cronjobs", Singular: "cronjob", Namespaced: true,
		New:        func() runtime.Object { return &batchv1.CronJob{} },
		NewList:    func() runtime.Object { return &batchv1.CronJobList{} },
		ShortNames: []string{"cj"},
		Categories: []string{"all"},
		Status:     true,
	}, cronjobregistry.Strategy, cronjobregistry.StatusStrategy)
}
