package namespace

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPropagationFinalizers(t *testing.T) {
	orphan, foreground := metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents
	policy := func(p metav1.DeletionPropagation) *metav1.DeleteOptions {
		return &metav1.DeleteOptions{PropagationPolicy: &p}
	}
	tests := []struct {
		name    string
		have    []string
		options *metav1.DeleteOptions
		want    []string
	}{
		{"no preference keeps none", nil, &metav1.DeleteOptions{}, nil},
		{"no preference keeps them", []string{"a", orphan}, &metav1.DeleteOptions{}, []string{"a", orphan}},
		{"I.44 background removes both", []string{orphan, "a", foreground}, policy(metav1.DeletePropagationBackground), []string{"a"}},
		{"I.45 foreground", []string{"a"}, policy(metav1.DeletePropagationForeground), []string{"a", foreground}},
		{"I.47 orphan", nil, policy(metav1.DeletePropagationOrphan), []string{orphan}},
		{"orphanDependents true", []string{foreground}, &metav1.DeleteOptions{OrphanDependents: ptr.To(true)}, []string{orphan}}, //nolint:staticcheck // SA1019: still honoured
		{"orphanDependents false wins over policy", nil,
			&metav1.DeleteOptions{OrphanDependents: ptr.To(false), PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}, []string{foreground}}, //nolint:staticcheck // SA1019: still honoured
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := propagationFinalizers(tt.have, tt.options); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.FinalizerName
		want []corev1.FinalizerName
	}{
		{"I.50 kubernetes added", nil, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"kept once", []corev1.FinalizerName{corev1.FinalizerKubernetes}, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"others kept", []corev1.FinalizerName{"example.com/x"}, []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NamespaceSpec{Finalizers: tt.in},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
			newStrategy(mainEndpoint).PrepareForCreate(context.Background(), ns)
			if !slices.Equal(ns.Spec.Finalizers, tt.want) || ns.Status.Phase != corev1.NamespaceActive {
				t.Fatalf("finalizers %v phase %q", ns.Spec.Finalizers, ns.Status.Phase)
			}
		})
	}
}

// TestEndpoints: each endpoint writes only its part of a namespace, and
// validates it.
func TestEndpoints(t *testing.T) {
	old := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	sent := old.DeepCopy()
	sent.Spec.Finalizers = nil
	sent.Status.Phase = corev1.NamespaceTerminating
	tests := []struct {
		endpoint      endpoint
		wantFinalized bool
		wantPhase     corev1.NamespacePhase
		wantInvalid   bool
	}{
		{mainEndpoint, false, corev1.NamespaceActive, false},
		{finalizeEndpoint, true, corev1.NamespaceActive, false},
		// Terminating without a deletionTimestamp is refused.
		{statusEndpoint, false, corev1.NamespaceTerminating, true},
	}
	for _, tt := range tests {
		s := newStrategy(tt.endpoint)
		ns := sent.DeepCopy()
		s.PrepareForUpdate(context.Background(), ns, old)
		if got := len(ns.Spec.Finalizers) == 0; got != tt.wantFinalized || ns.Status.Phase != tt.wantPhase {
			t.Errorf("endpoint %d: finalizers %v phase %q", tt.endpoint, ns.Spec.Finalizers, ns.Status.Phase)
		}
		if errs := s.ValidateUpdate(context.Background(), ns, old); (len(errs) > 0) != tt.wantInvalid {
			t.Errorf("endpoint %d: validation %v", tt.endpoint, errs)
		}
	}
}

func TestValidateFinalizers(t *testing.T) {
	for name, want := range map[corev1.FinalizerName]bool{
		corev1.FinalizerKubernetes: true, "example.com/x": true, "custom": false, "Bad Name/x": false,
	} {
		if got := len(validateFinalizers([]corev1.FinalizerName{name})) == 0; got != want {
			t.Errorf("%q valid %v, want %v", name, got, want)
		}
	}
}

func TestCanonicalizeLabels(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gen-x1"}}
	newStrategy(mainEndpoint).Canonicalize(ns)
	if ns.Labels[corev1.LabelMetadataName] != "gen-x1" {
		t.Fatalf("labels %v", ns.Labels)
	}
}
