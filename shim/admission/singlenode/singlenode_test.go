package singlenode

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

func TestAdmitPlacesPodsOnTheNode(t *testing.T) {
	pod := func(node, scheduler string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: corev1.PodSpec{NodeName: node, SchedulerName: scheduler}}
	}
	for _, tc := range []struct {
		name        string
		obj         runtime.Object
		resource    string
		subresource string
		want        string
	}{
		{"no node", pod("", ""), "pods", "", "n1"},
		{"default scheduler", pod("", corev1.DefaultSchedulerName), "pods", "", "n1"},
		{"already placed", pod("other", ""), "pods", "", "other"},
		{"another scheduler", pod("", "my-scheduler"), "pods", "", ""},
		{"a subresource", pod("", ""), "pods", "status", ""},
		{"not a pod", pod("", ""), "configmaps", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New("n1")
			gvr := corev1.SchemeGroupVersion.WithResource(tc.resource)
			a := admission.NewAttributesRecord(tc.obj, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "p",
				gvr, tc.subresource, admission.Create, &metav1.CreateOptions{}, false, nil)
			if !p.Handles(admission.Create) || p.Handles(admission.Update) {
				t.Error("handles more than create")
			}
			if err := p.Admit(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			if got := tc.obj.(*corev1.Pod).Spec.NodeName; got != tc.want {
				t.Errorf("nodeName %q, want %q", got, tc.want)
			}
		})
	}
}
