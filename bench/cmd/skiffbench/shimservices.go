package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// The shim scenario's Services (issue 36): n ClusterIP Services in
// agentNamespace, Service j selecting the density pods i with i mod n = j
// (by the label shimServiceLabel), so that each has an EndpointSlice with
// endpoints and the service proxy has rules for them. With fewer pods than
// Services the last Services select none.

// shimServiceLabel is the density pods' label the Services select.
const shimServiceLabel = "bench.skiff.dev/service"

// shimServicePrefix names the harness's Services: <prefix><j>.
const shimServicePrefix = "bench-svc-"

// shimServiceLabels is the labels of density pod i among n Services; nil
// (no labels) when n is 0.
func shimServiceLabels(n int) func(i int) map[string]string {
	if n <= 0 {
		return nil
	}
	return func(i int) map[string]string { return map[string]string{shimServiceLabel: strconv.Itoa(i % n)} }
}

// shimService is Service j: ClusterIP, port 80 to the pods' port 8080
// (nothing listens there: what is measured is the objects, their slices
// and the proxy's rules, not traffic), selecting the pods that
// shimServiceLabels puts in group j.
func shimService(j int) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: shimServicePrefix + strconv.Itoa(j), Namespace: agentNamespace},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeClusterIP,
			Selector: map[string]string{shimServiceLabel: strconv.Itoa(j)},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// createServices creates the n shimServices in agentNamespace,
// apiCreateWorkers calls in flight.
func createServices(ctx context.Context, cs kubernetes.Interface, n int) error {
	err := forEach(ctx, n, func(ctx context.Context, j int) error {
		_, err := cs.CoreV1().Services(agentNamespace).Create(ctx, shimService(j), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("create %d Services: %w", n, err)
	}
	return nil
}

// deleteServices deletes the n shimServices; one already gone is fine.
func deleteServices(ctx context.Context, cs kubernetes.Interface, n int) error {
	err := forEach(ctx, n, func(ctx context.Context, j int) error {
		err := cs.CoreV1().Services(agentNamespace).Delete(ctx, shimServicePrefix+strconv.Itoa(j), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %d Services: %w", n, err)
	}
	return nil
}

// readyEndpoints counts the ready endpoints in the EndpointSlices of the
// harness's Services (label kubernetes.io/service-name with
// shimServicePrefix). Pure.
func readyEndpoints(slices []discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		if !strings.HasPrefix(s.Labels[discoveryv1.LabelServiceName], shimServicePrefix) {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

// waitServiceEndpoints polls agentNamespace's EndpointSlices every second
// until the harness's Services have want ready endpoints together (every
// labelled pod ready in its Service's slice), or apiWait passes.
func waitServiceEndpoints(ctx context.Context, cs kubernetes.Interface, want int) error {
	ctx, cancel := context.WithTimeout(ctx, apiWait)
	defer cancel()
	for {
		list, err := cs.DiscoveryV1().EndpointSlices(agentNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("wait for the Services' endpoints: %w", err)
		}
		got := readyEndpoints(list.Items)
		if got >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Services have %d of %d ready endpoints: %w", got, want, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
