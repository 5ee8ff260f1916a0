package service

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"
)

// objects is a rest.Getter and rest.Lister of fixed objects by name.
type objects map[string]runtime.Object

func (o objects) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := o[name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("x"), name)
}

func (o objects) List(_ context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	list := &discoveryv1.EndpointSliceList{}
	for _, obj := range o {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok && opts.LabelSelector.Matches(labels.Set(s.Labels)) {
			list.Items = append(list.Items, *s)
		}
	}
	return list, nil
}

func (o objects) NewList() runtime.Object { return &discoveryv1.EndpointSliceList{} }
func (o objects) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

// TestProxyLocation: upstream's ResourceLocation: a port by name or
// number, only ready endpoints that are the namespace's pods.
func TestProxyLocation(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"}, Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.88.0.7"}}}}
	ep := func(ip string, ready bool, target string) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
		if target != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: target}
		}
		return e
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
		Endpoints: []discoveryv1.Endpoint{ep("10.88.0.9", false, "web-1"), ep("10.88.0.8", true, ""), ep("10.88.0.7", true, "web-1")}}
	r := NewProxyREST(objects{"web": svc, "bare": &corev1.Service{}}, objects{"web-1": pod}, objects{"web-x": slice}, nil)
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	for _, tc := range []struct {
		id, want    string
		unavailable bool
	}{
		{id: "web:http", want: "//10.88.0.7:8080"},
		{id: "web:80", want: "//10.88.0.7:8080"},
		{id: "https:web:http", want: "https://10.88.0.7:8080"},
		{id: "web:81", unavailable: true},
		{id: "web", unavailable: true}, // no port named ""
		{id: "bare", unavailable: true},
	} {
		loc, err := r.location(ctx, tc.id)
		if tc.unavailable {
			if !apierrors.IsServiceUnavailable(err) {
				t.Errorf("%s: %v, want a 503", tc.id, err)
			}
			continue
		}
		if err != nil || loc.String() != tc.want {
			t.Errorf("%s: %v (%v), want %s", tc.id, loc, err, tc.want)
		}
	}
}
