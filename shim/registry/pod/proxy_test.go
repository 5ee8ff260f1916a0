package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podGetter is a rest.Getter of fixed Pods.
type podGetter map[string]*corev1.Pod

func (g podGetter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if p, ok := g[name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

// TestProxyLocation: upstream's pod.ResourceLocation: "pod", "pod:port"
// and "scheme:pod:port" at the pod's IP, the first container port when
// none is given; no IP, or a malformed name, is a 400.
func TestProxyLocation(t *testing.T) {
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "sidecar"}, {Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090}}},
	}}, Status: corev1.PodStatus{PodIP: "10.88.0.5"}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{PodIP: "10.88.0.6"}}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}
	r := NewProxyREST(podGetter{"web": web, "bare": bare, "pending": pending})
	for _, tc := range []struct {
		id, want string
		badReq   bool
	}{
		{id: "web", want: "//10.88.0.5:8080"},
		{id: "web:9090", want: "//10.88.0.5:9090"},
		{id: "https:web:443", want: "https://10.88.0.5:443"},
		{id: "bare", want: "//10.88.0.6"},
		{id: "pending", badReq: true},
		{id: "a:b:c:d", badReq: true},
	} {
		loc, err := r.location(context.Background(), tc.id)
		if tc.badReq {
			if !apierrors.IsBadRequest(err) {
				t.Errorf("%s: %v, want a 400", tc.id, err)
			}
			continue
		}
		if err != nil || loc.String() != tc.want {
			t.Errorf("%s: %v (%v), want %s", tc.id, loc, err, tc.want)
		}
	}
	if _, err := r.location(context.Background(), "nope"); !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v, want a 404", err)
	}
}
