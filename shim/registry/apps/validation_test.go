package apps

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffnode/skiff/shim/scheme"
)

func validDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
		},
	}
	scheme.DefaultDeployment(d)
	return d
}

func TestValidateDeploymentSpec(t *testing.T) {
	zero := intstr.FromInt32(0)
	tests := []struct {
		name    string
		mutate  func(*appsv1.Deployment)
		wantErr string // substring of the first error's field; "" for none
	}{
		{"valid", func(*appsv1.Deployment) {}, ""},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, "spec.selector"},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector"},
		{"selector does not match", func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels = map[string]string{"app": "x"} }, "spec.template.metadata.labels"},
		{"negative replicas", func(d *appsv1.Deployment) { *d.Spec.Replicas = -1 }, "spec.replicas"},
		{"restartPolicy Never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, "spec.template.spec.restartPolicy"},
		{"no containers", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, "spec.template.spec.containers"},
		{"recreate with rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }, "spec.strategy.rollingUpdate"},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "Blue"; d.Spec.Strategy.RollingUpdate = nil }, "spec.strategy.type"},
		{"surge and unavailable 0", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}
		}, "spec.strategy.rollingUpdate.maxUnavailable"},
		{"bad percent", func(d *appsv1.Deployment) {
			bad := intstr.FromString("1x%")
			d.Spec.Strategy.RollingUpdate.MaxSurge = &bad
		}, "spec.strategy.rollingUpdate.maxSurge"},
		{"unavailable over 100%", func(d *appsv1.Deployment) {
			over := intstr.FromString("101%")
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = &over
		}, "spec.strategy.rollingUpdate.maxUnavailable"},
		{"deadline not above minReadySeconds", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }, "spec.progressDeadlineSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDeployment()
			tt.mutate(d)
			errs := validateDeploymentSpec(&d.Spec)
			if tt.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("errors: %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.HasPrefix(errs[0].Field, tt.wantErr) {
				t.Fatalf("errors %v, want one on %s", errs, tt.wantErr)
			}
		})
	}
}

func TestImmutableSelector(t *testing.T) {
	d, old := validDeployment(), validDeployment()
	if errs := Deployments.ValidateUpdate(d, old); len(errs) != 0 {
		t.Fatalf("same selector: %v", errs)
	}
	d.Spec.Selector.MatchLabels["x"] = "y"
	if errs := Deployments.ValidateUpdate(d, old); len(errs) != 1 || errs[0].Field != "spec.selector" {
		t.Fatalf("changed selector: %v", errs)
	}
}

func TestGenerationBump(t *testing.T) {
	old := validDeployment()
	old.Generation = 4
	d := old.DeepCopy()
	Deployments.PrepareForUpdate(d, old)
	if d.Generation != 4 {
		t.Fatalf("no change bumped to %d", d.Generation)
	}
	d.Annotations = map[string]string{"a": "b"}
	Deployments.PrepareForUpdate(d, old)
	if d.Generation != 5 {
		t.Fatalf("annotation change: generation %d", d.Generation)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	rs2 := rs.DeepCopy()
	rs2.Annotations = map[string]string{"a": "b"}
	ReplicaSets.PrepareForUpdate(rs2, rs)
	if rs2.Generation != 1 {
		t.Fatal("replicaset annotation change bumped the generation")
	}
}
