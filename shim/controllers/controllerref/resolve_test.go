package controllerref

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func TestResolve(t *testing.T) {
	cached := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", UID: "u1"}}
	get := func(name string) (*appsv1.ReplicaSet, error) {
		if name != cached.Name {
			return nil, errors.New("not found")
		}
		return cached, nil
	}
	tests := []struct {
		name string
		ref  metav1.OwnerReference
		want *appsv1.ReplicaSet
	}{
		{"match", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}, cached},
		{"other UID", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u2"}, nil},
		{"other kind", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "rs", UID: "u1"}, nil},
		{"other group version", metav1.OwnerReference{APIVersion: "extensions/v1beta1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}, nil},
		{"not cached", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "u1"}, nil},
	}
	for _, tt := range tests {
		if got := Resolve(&tt.ref, rsKind, get); got != tt.want {
			t.Errorf("%s: Resolve = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSelecting(t *testing.T) {
	owner := func(name string, sel *metav1.LabelSelector) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: sel}}
	}
	owners := []*appsv1.ReplicaSet{
		owner("match", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		owner("other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		owner("empty", &metav1.LabelSelector{}),
		owner("nil", nil),
		owner("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bad"}}}),
		owner("match too", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}),
	}
	got := Selecting(owners, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		labels.Set{"app": "web", "tier": "front"})
	var names []string
	for _, rs := range got {
		names = append(names, rs.Name)
	}
	if want := []string{"match", "match too"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Selecting = %v, want %v", names, want)
	}
}
