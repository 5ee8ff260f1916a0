package upstream

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodTemplatesAndLimitRanges: a bare PodTemplate gets a pod's
// defaults (upstream's validation needs them), a privileged one is
// allowed (kube-apiserver's --allow-privileged, as kubeadm sets it), and
// an invalid LimitRange is refused.
func TestPodTemplatesAndLimitRanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := startServer(ctx, t)
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	got, err := client.CoreV1().PodTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Template.Spec; s.RestartPolicy != corev1.RestartPolicyAlways || s.Containers[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("template spec not defaulted: %+v", s)
	}
	privileged := true
	tmpl.Name = "privileged"
	tmpl.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	if _, err := client.CoreV1().PodTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Errorf("a privileged template: %v", err)
	}
	bad := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Min:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}
	if _, err := client.CoreV1().LimitRanges("default").Create(ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Error("a LimitRange with min above max was accepted")
	}
	bad.Spec.Limits[0].Min[corev1.ResourceCPU] = resource.MustParse("100m")
	if _, err := client.CoreV1().LimitRanges("default").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().LimitRanges("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}
