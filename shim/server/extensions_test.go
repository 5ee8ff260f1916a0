package server

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffnode/skiff/shim/registry/generic"
)

// testJobs is a bare batch/v1 Jobs kind whose creation refuses a Job
// without completions, as a build's kinds validate.
var testJobs = &generic.Kind{
	Group: batchv1.GroupName, Version: "v1", Resource: "jobs", Singular: "job", Namespaced: true,
	New:     func() runtime.Object { return &batchv1.Job{} },
	NewList: func() runtime.Object { return &batchv1.JobList{} },
	Status:  true,
	ValidateCreate: func(obj runtime.Object) field.ErrorList {
		if obj.(*batchv1.Job).Spec.Completions == nil {
			return field.ErrorList{field.Required(field.NewPath("spec", "completions"), "test kind")}
		}
		return nil
	},
}

// TestOptionsKindsAndControllers: Options.Kinds are served beside the
// shim's own (discovery, create, validation) and Options.Controllers run
// with the shared informers, which the server starts, until the server
// stops.
func TestOptionsKindsAndControllers(t *testing.T) {
	seen := make(chan string, 10)
	stopped := make(chan struct{})
	controllers := func(c ControllerContext) ([]func(context.Context), error) {
		jobs := c.Informers.Batch().V1().Jobs()
		if _, err := jobs.Informer().AddEventHandler(jobHandler(seen)); err != nil {
			return nil, err
		}
		return []func(context.Context){func(ctx context.Context) {
			<-ctx.Done()
			close(stopped)
		}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Run("served", func(t *testing.T) {
		_, _, client := startShimWith(t, Options{Kinds: []*generic.Kind{testJobs}, Controllers: controllers})
		resources, err := client.Discovery().ServerResourcesForGroupVersion("batch/v1")
		if err != nil || len(resources.APIResources) == 0 || resources.APIResources[0].Name != "jobs" {
			t.Fatalf("discovery of batch/v1: %+v, %v", resources, err)
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{}}}
		if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err == nil ||
			!strings.Contains(err.Error(), "spec.completions: Required value") {
			t.Fatalf("create without completions: %v, want the kind's validation error", err)
		}
		job.Spec.Completions = new(int32)
		if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case name := <-seen:
			if name != "j" {
				t.Fatalf("controller saw %q, want j", name)
			}
		case <-ctx.Done():
			t.Fatal("the controller's informer never saw the Job")
		}
	})
	select { // startShimWith's cleanup stopped the server
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the extra controller's context did not end with the server")
	}
}

// TestNewFailsCleanly: a build's kind that cannot be installed makes New
// return an error (and close what it opened), not panic.
func TestNewFailsCleanly(t *testing.T) {
	bad := *testJobs
	bad.Group = "unregistered.example.com"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(ctx, Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Kinds: []*generic.Kind{&bad}})
	if err == nil {
		s.Close()
		t.Fatal("New served a kind of a group outside the scheme")
	}
	t.Logf("error (as wanted): %v", err)
}

// jobHandler sends the name of each Job added to seen.
func jobHandler(seen chan<- string) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			seen <- j.Name
		}
	}}
}
