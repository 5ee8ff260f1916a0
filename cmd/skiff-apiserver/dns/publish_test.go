package dns

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/cmd/skiff-apiserver/internal/selfservice"
)

var (
	dnsIP  = netip.MustParseAddr("10.96.0.10")
	nodeIP = netip.MustParseAddr("192.0.2.7")
)

func TestPlanService(t *testing.T) {
	want := service(dnsIP)
	edit := func(f func(*corev1.Service)) *corev1.Service {
		s := service(dnsIP)
		f(s)
		return s
	}
	for _, tc := range []struct {
		name    string
		current *corev1.Service
		want    selfservice.Action
	}{
		{"none", nil, selfservice.Create},
		{"as wanted", service(dnsIP), selfservice.Keep},
		{"a user's", edit(func(s *corev1.Service) { delete(s.Labels, "app.kubernetes.io/managed-by") }), selfservice.Foreign},
		{"old cluster IP", service(netip.MustParseAddr("10.96.0.53")), selfservice.Recreate},
		{"ports edited", edit(func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }), selfservice.Update},
		{"selector added", edit(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"k8s-app": "kube-dns"} }), selfservice.Update},
	} {
		if got := selfservice.PlanService(tc.current, want); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanSlice(t *testing.T) {
	want := slice("n1", nodeIP, 10053)
	edit := func(f func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		s := slice("n1", nodeIP, 10053)
		f(s)
		return s
	}
	for _, tc := range []struct {
		name    string
		current *discoveryv1.EndpointSlice
		want    selfservice.Action
	}{
		{"none", nil, selfservice.Create},
		{"as wanted", slice("n1", nodeIP, 10053), selfservice.Keep},
		{"a user's", edit(func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelManagedBy] = "me" }), selfservice.Foreign},
		{"node address changed", slice("n1", netip.MustParseAddr("192.0.2.8"), 10053), selfservice.Update},
		{"port changed", slice("n1", nodeIP, 1053), selfservice.Update},
		{"not ready", edit(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) }), selfservice.Update},
		{"service label edited", edit(func(s *discoveryv1.EndpointSlice) { s.Labels[discoveryv1.LabelServiceName] = "x" }), selfservice.Update},
	} {
		if got := selfservice.PlanSlice(tc.current, want); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakePublisher is a Publisher of the kube-dns objects whose current objects are the fake
// clientset's.
func fakePublisher(objs ...any) (*selfservice.Publisher, *fake.Clientset) {
	cs := fake.NewClientset()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			_, _ = cs.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, _ = cs.DiscoveryV1().EndpointSlices(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
	}
	return &selfservice.Publisher{Client: cs, What: "cluster DNS",
		Service: func() (*corev1.Service, error) {
			return selfservice.NotFoundNil(cs.CoreV1().Services(ServiceNamespace).Get(context.Background(), ServiceName, metav1.GetOptions{}))
		},
		Slice: func() (*discoveryv1.EndpointSlice, error) {
			return selfservice.NotFoundNil(cs.DiscoveryV1().EndpointSlices(ServiceNamespace).Get(context.Background(), sliceName, metav1.GetOptions{}))
		},
	}, cs
}

// TestPublish: the Service and slice are made, put back to what they
// should be, and a user's Service of that name is left alone, with an
// error.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	want, wantSlice := service(dnsIP), slice("n1", nodeIP, 10053)
	old := slice("n1", netip.MustParseAddr("192.0.2.99"), 10053)
	for _, tc := range []struct {
		name    string
		objs    []any
		wantErr string
	}{
		{"fresh", nil, ""},
		{"moved node", []any{service(netip.MustParseAddr("10.96.0.53")), old}, ""},
		{"a user's Service", []any{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName}}}, "is not skiff-apiserver's"},
	} {
		p, cs := fakePublisher(tc.objs...)
		err := p.Publish(ctx, selfservice.Want{Service: want, Slice: wantSlice})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			if _, err := cs.DiscoveryV1().EndpointSlices(ServiceNamespace).Get(ctx, sliceName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: slice published beside a user's Service (%v)", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		svc, err := cs.CoreV1().Services(ServiceNamespace).Get(ctx, ServiceName, metav1.GetOptions{})
		if err != nil || selfservice.PlanService(svc, want) != selfservice.Keep {
			t.Errorf("%s: Service %+v (%v), want %+v", tc.name, svc, err, want.Spec)
		}
		s, err := cs.DiscoveryV1().EndpointSlices(ServiceNamespace).Get(ctx, sliceName, metav1.GetOptions{})
		if err != nil || selfservice.PlanSlice(s, wantSlice) != selfservice.Keep {
			t.Errorf("%s: slice %+v (%v)", tc.name, s, err)
		}
	}
}
