package generic

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TestKindHooks: the status subresource runs ValidateStatusUpdate and not
// the main resource's warnings; the main resource gives the kind's
// warnings; OrphanByDefault sets the default garbage-collection policy.
func TestKindHooks(t *testing.T) {
	ctx := context.Background()
	k := &Kind{
		Group: "batch", Version: "v1", Resource: "jobs", Namespaced: true, Status: true,
		New:     func() runtime.Object { return &batchv1.Job{} },
		NewList: func() runtime.Object { return &batchv1.JobList{} },
		ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
			if obj.(*batchv1.Job).Status.Active < 0 {
				return field.ErrorList{field.Invalid(field.NewPath("status", "active"), -1, "negative")}
			}
			return nil
		},
		WarningsOnCreate: func(runtime.Object) []string { return []string{"create"} },
		WarningsOnUpdate: func(_, _ runtime.Object) []string { return []string{"update"} },
		OrphanByDefault:  true,
	}
	old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", ResourceVersion: "1"}}
	bad := old.DeepCopy()
	bad.Status.Active = -1
	main, status := newStrategy(k, false), newStrategy(k, true)
	if errs := status.ValidateUpdate(ctx, bad, old); len(errs) != 1 || errs[0].Field != "status.active" {
		t.Errorf("status update errors = %v, want status.active", errs)
	}
	if errs := main.ValidateUpdate(ctx, bad, old); len(errs) != 0 {
		t.Errorf("main update errors = %v, want none (status is not the main resource's)", errs)
	}
	if w := main.WarningsOnCreate(ctx, old); len(w) != 1 || w[0] != "create" {
		t.Errorf("create warnings = %v", w)
	}
	if w := main.WarningsOnUpdate(ctx, old, old); len(w) != 1 || w[0] != "update" {
		t.Errorf("update warnings = %v", w)
	}
	if w := status.WarningsOnUpdate(ctx, old, old); w != nil {
		t.Errorf("status update warnings = %v, want none", w)
	}
	if p := main.DefaultGarbageCollectionPolicy(ctx); p != rest.OrphanDependents {
		t.Errorf("policy = %q, want orphan", p)
	}
	k.OrphanByDefault = false
	if p := main.DefaultGarbageCollectionPolicy(ctx); p != rest.DeleteDependents {
		t.Errorf("policy = %q, want delete", p)
	}
}
