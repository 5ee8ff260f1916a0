package upstream

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// testJob is a valid Job as a client sends it, defaulted as the shim's
// decoder defaults it.
func testJob(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	s := runtime.NewScheme()
	if err := addBatchToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.Default(j)
	return j
}

func testConverter(t *testing.T) converter {
	t.Helper()
	c, err := newConverter()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestJobsKind: the Jobs kind's hooks are upstream's job strategy's:
// the generated selector and labels, upstream's validation texts, its
// immutable fields and warnings, status validation, and kubectl's columns.
func TestJobsKind(t *testing.T) {
	k := jobs(testConverter(t))

	j := testJob(t, "pi")
	k.PrepareForCreate(j)
	if got := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; got != "uid-pi" {
		t.Errorf("generated selector = %v, want %s=uid-pi", j.Spec.Selector, batchv1.ControllerUidLabel)
	}
	if got := j.Spec.Template.Labels[batchv1.JobNameLabel]; got != "pi" || j.Generation != 1 {
		t.Errorf("template labels %v, generation %d", j.Spec.Template.Labels, j.Generation)
	}
	if j.Kind != "" || j.APIVersion != "" {
		t.Errorf("type meta changed to %s %s", j.APIVersion, j.Kind)
	}
	if errs := k.ValidateCreate(j); len(errs) != 0 {
		t.Fatalf("valid job: %v", errs)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		{"negative parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) },
			"spec.parallelism: Invalid value: -1: must be greater than or equal to 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := j.DeepCopy()
			tc.mutate(bad)
			if errs := k.ValidateCreate(bad); !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("errors %v, want %q", errs, tc.want)
			}
		})
	}

	changed := j.DeepCopy()
	changed.Spec.Completions = ptr.To[int32](5)
	k.PrepareForUpdate(changed, j)
	if errs := k.ValidateUpdate(changed, j); !strings.Contains(errs.ToAggregate().Error(), "spec.completions: Invalid value: 5: field is immutable") {
		t.Errorf("update of completions: %v", errs)
	}

	status := j.DeepCopy()
	status.Status.Active = -1
	if errs := k.ValidateStatusUpdate(status, j); !strings.Contains(errs.ToAggregate().Error(), "status.active") {
		t.Errorf("status update with active -1: %v, want an error on status.active", errs)
	}

	dotted := testJob(t, "a.b")
	k.PrepareForCreate(dotted)
	if w := k.WarningsOnCreate(dotted); len(w) == 0 || !strings.Contains(w[0], "a DNS label is recommended") {
		t.Errorf("warnings for a dotted name = %v", w)
	}

	if got, rows := tableColumns(t, k, &batchv1.JobList{Items: []batchv1.Job{*j}}); !strings.HasPrefix(got, "Name,Status,Completions,Duration,Age") || rows != 1 {
		t.Errorf("table columns %s, %d rows", got, rows)
	}
}

// TestCronJobsKind: the CronJobs kind's validation is upstream's cronjob
// strategy's (schedule, time zone, the job template), and kubectl's
// columns are upstream's.
func TestCronJobsKind(t *testing.T) {
	k := cronJobs(testConverter(t))
	job := testJob(t, "tick")
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default", UID: "uid-tick"},
		Spec: batchv1.CronJobSpec{
			Schedule:          "*/5 * * * *",
			ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate:       batchv1.JobTemplateSpec{Spec: job.Spec},
		},
	}
	k.PrepareForCreate(cj)
	if errs := k.ValidateCreate(cj); len(errs) != 0 {
		t.Fatalf("valid cronjob: %v", errs)
	}
	if cj.Generation != 1 {
		t.Errorf("generation %d, want 1", cj.Generation)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   string
	}{
		{"bad schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "every minute" }, `spec.schedule: Invalid value: "every minute"`},
		{"bad time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }, `spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
		{"bad concurrency policy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" }, `spec.concurrencyPolicy: Unsupported value: "Sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := cj.DeepCopy()
			tc.mutate(bad)
			if errs := k.ValidateCreate(bad); !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("errors %v, want %q", errs, tc.want)
			}
		})
	}
	if got, _ := tableColumns(t, k, cj); !strings.HasPrefix(got, "Name,Schedule,Timezone,Suspend,Active,Last Schedule,Age") {
		t.Errorf("table columns %s", got)
	}
}

// tableColumns returns the names of k's table columns for obj, comma
// separated, and the table's row count.
func tableColumns(t *testing.T, k *generic.Kind, obj runtime.Object) (string, int) {
	t.Helper()
	table, err := k.Table.ConvertToTable(context.Background(), obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	return strings.Join(columns, ","), len(table.Rows)
}
