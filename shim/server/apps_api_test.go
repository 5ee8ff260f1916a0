package server

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// newDeployment is what `kubectl create deployment <name> --image nginx
// --replicas n` sends.
func newDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
}

// TestAppsAPI checks the apps/v1 registry: defaults, validation,
// generation, status reset, the scale subresource (J.1).
func TestAppsAPI(t *testing.T) {
	_, _, client := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deps := client.AppsV1().Deployments("default")

	d := newDeployment("api", 2)
	d.Status.Replicas = 7
	got, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ru := got.Spec.Strategy.RollingUpdate
	if got.Generation != 1 || got.Status.Replicas != 0 || got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ru == nil || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" ||
		*got.Spec.RevisionHistoryLimit != 10 || *got.Spec.ProgressDeadlineSeconds != 600 ||
		got.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		got.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways ||
		got.Spec.Template.Spec.EnableServiceLinks != nil {
		t.Fatalf("defaults: %+v", got)
	}

	bad := []*appsv1.Deployment{newDeployment("nosel", 1), newDeployment("mismatch", 1), newDeployment("never", 1)}
	bad[0].Spec.Selector = nil
	bad[1].Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	bad[2].Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	for _, b := range bad {
		if _, err := deps.Create(ctx, b, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("create %s: %v, want 422", b.Name, err)
		}
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deps.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Selector.MatchLabels = map[string]string{"app": "api", "x": "y"}
		d.Spec.Template.Labels["x"] = "y"
		_, err = deps.Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if !apierrors.IsInvalid(err) {
		t.Errorf("selector change: %v, want 422", err)
	}

	scale, err := deps.GetScale(ctx, "api", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 2 || scale.Status.Selector != "app=api" {
		t.Fatalf("scale: %v %+v", err, scale)
	}
	// The controllers write the status meanwhile: the Scale's
	// resourceVersion is a precondition, so retry as clients do.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := deps.GetScale(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 5
		_, err = deps.UpdateScale(ctx, "api", scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"replicas":4}}`)
	if _, err := deps.Patch(ctx, "api", types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	after, err := deps.Get(ctx, "api", metav1.GetOptions{})
	if err != nil || *after.Spec.Replicas != 4 || after.Generation != 3 {
		t.Fatalf("after scale: %v replicas %d generation %d", err, *after.Spec.Replicas, after.Generation)
	}
	neg := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}
	if _, err := deps.UpdateScale(ctx, "api", neg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("negative scale: %v, want 422", err)
	}
	rs, err := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=0"})
	if err != nil {
		t.Fatalf("replicasets by status.replicas: %v %v", err, rs)
	}
}
