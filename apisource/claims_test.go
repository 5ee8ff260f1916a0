package apisource

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeClaimAPI serves claim default/c and volume pv; anything else is
// NotFound. It records each call and whether its context had a deadline.
type fakeClaimAPI struct {
	calls    []string
	deadline []bool
}

func (f *fakeClaimAPI) record(ctx context.Context, call string) {
	_, ok := ctx.Deadline()
	f.calls, f.deadline = append(f.calls, call), append(f.deadline, ok)
}

func (f *fakeClaimAPI) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	f.record(ctx, "GetPersistentVolumeClaim "+namespace+"/"+name)
	if namespace+"/"+name != "default/c" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
	}
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, nil
}

func (f *fakeClaimAPI) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	f.record(ctx, "GetPersistentVolume "+name)
	if name != "pv" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
	}
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
}

// TestClaims: each read is one API call under a deadline; objects and
// errors (NotFound) come back as the API gave them.
func TestClaims(t *testing.T) {
	api := &fakeClaimAPI{}
	c := NewClaims(api)
	ctx := context.Background()
	if pvc, err := c.PersistentVolumeClaim(ctx, "default", "c"); err != nil || pvc.Name != "c" {
		t.Errorf("claim default/c = %v, %v", pvc, err)
	}
	if _, err := c.PersistentVolumeClaim(ctx, "other", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("claim other/c: %v, want NotFound", err)
	}
	if pv, err := c.PersistentVolume(ctx, "pv"); err != nil || pv.Name != "pv" {
		t.Errorf("volume pv = %v, %v", pv, err)
	}
	if _, err := c.PersistentVolume(ctx, "gone"); !apierrors.IsNotFound(err) || err.Error() != `persistentvolumes "gone" not found` {
		t.Errorf("volume gone: %v, want NotFound as the API said it", err)
	}
	want := []string{"GetPersistentVolumeClaim default/c", "GetPersistentVolumeClaim other/c", "GetPersistentVolume pv", "GetPersistentVolume gone"}
	if len(api.calls) != len(want) {
		t.Fatalf("calls %q, want %q", api.calls, want)
	}
	for i := range want {
		if api.calls[i] != want[i] || !api.deadline[i] {
			t.Errorf("call %d: %q (deadline %v), want %q with a deadline", i, api.calls[i], api.deadline[i], want[i])
		}
	}
}
