package upstream

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// testService is a Service of type typ with one port; nodePort 0: any.
func testService(name string, typ corev1.ServiceType, nodePort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}},
		},
	}
}

// TestServicesAllocate: Services get cluster IPs from the range and node
// ports from theirs, as upstream's storage allocates them (families,
// policy, headless, ExternalName, conflicts with upstream's messages), and
// a deleted Service's port is free again.
func TestServicesAllocate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{ServiceCIDR: "10.97.0.0/24", NodePortRange: "30100-30110"}
	client, _ := startServerIn(ctx, t, t.TempDir(), cfg)
	svcs := client.CoreV1().Services("default")
	create := func(s *corev1.Service) (*corev1.Service, error) { return svcs.Create(ctx, s, metav1.CreateOptions{}) }

	web, err := create(testService("web", corev1.ServiceTypeClusterIP, 0))
	if err != nil {
		t.Fatal(err)
	}
	if ip, err := netip.ParseAddr(web.Spec.ClusterIP); err != nil || !netip.MustParsePrefix(cfg.ServiceCIDR).Contains(ip) {
		t.Errorf("clusterIP %q, want one in %s", web.Spec.ClusterIP, cfg.ServiceCIDR)
	}
	if fmt.Sprintf("%v %v %v %v %v", web.Spec.ClusterIPs, web.Spec.IPFamilies, *web.Spec.IPFamilyPolicy, *web.Spec.InternalTrafficPolicy, web.Spec.SessionAffinity) !=
		fmt.Sprintf("[%s] [IPv4] SingleStack Cluster None", web.Spec.ClusterIP) {
		t.Errorf("spec = %q, want upstream's allocation and defaults", fmt.Sprintf("%v %v %v %v %v", web.Spec.ClusterIPs, web.Spec.IPFamilies, *web.Spec.IPFamilyPolicy, *web.Spec.InternalTrafficPolicy, web.Spec.SessionAffinity))
	}

	np, err := create(testService("np", corev1.ServiceTypeNodePort, 0))
	if err != nil {
		t.Fatal(err)
	}
	port := np.Spec.Ports[0].NodePort
	if port < 30100 || port > 30110 || np.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("nodePort %d (want 30100-30110), externalTrafficPolicy %q", port, np.Spec.ExternalTrafficPolicy)
	}
	_, err = create(testService("clash", corev1.ServiceTypeNodePort, port))
	if want := fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", port); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a taken node port: %v, want %q", err, want)
	}
	_, err = create(testService("far", corev1.ServiceTypeNodePort, 30111))
	if want := "provided port is not in the valid range. The range of valid ports is 30100-30110"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a port out of range: %v, want %q", err, want)
	}
	v6 := testService("v6", corev1.ServiceTypeClusterIP, 0)
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	if _, err := create(v6); err == nil || !strings.Contains(err.Error(), "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster") {
		t.Errorf("IPv6 on an IPv4 cluster: %v", err)
	}

	headless := testService("db", corev1.ServiceTypeClusterIP, 0)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if h, err := create(headless); err != nil || h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless: %v, clusterIP %q", err, h.Spec.ClusterIP)
	}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	if e, err := create(ext); err != nil || e.Spec.ClusterIP != "" || e.Spec.InternalTrafficPolicy != nil {
		t.Errorf("ExternalName: %v, %+v; want no cluster IP and no internalTrafficPolicy", err, e.Spec)
	}

	if err := svcs.Delete(ctx, "np", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := create(testService("again", corev1.ServiceTypeNodePort, port)); err != nil {
		t.Errorf("the deleted service's port: %v", err)
	}
	list, err := svcs.List(ctx, metav1.ListOptions{FieldSelector: "spec.type=NodePort"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "again" {
		t.Errorf("field selector spec.type=NodePort: %v, %d services; want again", err, len(list.Items))
	}
	web.Spec.Type = corev1.ServiceTypeNodePort
	if up, err := svcs.Update(ctx, web, metav1.UpdateOptions{}); err != nil || up.Spec.Ports[0].NodePort == 0 || up.Spec.ClusterIP != web.Spec.ClusterIP {
		t.Errorf("ClusterIP to NodePort: %v; want a node port and the same cluster IP", err)
	}
}

// TestServiceAllocationsSurviveRestart: a restarted server knows the
// stored Services' cluster IPs and node ports (the repair) and allocates
// neither again.
func TestServiceAllocationsSurviveRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir, cfg := t.TempDir(), Config{ServiceCIDR: "10.97.0.0/24", NodePortRange: "30100-30110"}
	client, stop := startServerIn(ctx, t, dir, cfg)
	old, err := client.CoreV1().Services("default").Create(ctx, testService("web", corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	client, _ = startServerIn(ctx, t, dir, cfg)
	clash := testService("clash", corev1.ServiceTypeNodePort, old.Spec.Ports[0].NodePort)
	clash.Spec.ClusterIP = old.Spec.ClusterIP
	_, err = client.CoreV1().Services("default").Create(ctx, clash, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("the stored service's cluster IP after a restart: %v, want it taken", err)
	}
	clash.Spec.ClusterIP = ""
	_, err = client.CoreV1().Services("default").Create(ctx, clash, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("the stored service's node port after a restart: %v, want it taken", err)
	}
}

// TestEndpointsFollowReadyPods: upstream's EndpointSlice and Endpoints
// controllers in the server list a selected pod's address, ready or not
// as the pod is.
func TestEndpointsFollowReadyPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, testService("web", corev1.ServiceTypeClusterIP, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}
	pod, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady := func(ready bool) {
		t.Helper()
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.7", PodIPs: []corev1.PodIP{{IP: "10.88.0.7"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
		if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReady(true)
	waitEndpoint(ctx, t, client, "10.88.0.7:8080 ready=true", "10.88.0.7:8080")
	setReady(false)
	waitEndpoint(ctx, t, client, "10.88.0.7:8080 ready=false", "notready 10.88.0.7:8080")
}

// waitEndpoint waits until the web Service's EndpointSlice reads slice and
// its Endpoints read eps.
func waitEndpoint(ctx context.Context, t *testing.T, client kubernetes.Interface, slice, eps string) {
	t.Helper()
	var gotSlice, gotEps string
	for {
		slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		gotSlice = ""
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				gotSlice += fmt.Sprintf("%s:%d ready=%v", e.Addresses[0], *s.Ports[0].Port, ptr.Deref(e.Conditions.Ready, false))
			}
		}
		if ep, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
			gotEps = ""
			for _, ss := range ep.Subsets {
				for _, a := range ss.Addresses {
					gotEps += fmt.Sprintf("%s:%d", a.IP, ss.Ports[0].Port)
				}
				for _, a := range ss.NotReadyAddresses {
					gotEps += fmt.Sprintf("notready %s:%d", a.IP, ss.Ports[0].Port)
				}
			}
		}
		if gotSlice == slice && gotEps == eps {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("EndpointSlice %q, Endpoints %q; want %q, %q", gotSlice, gotEps, slice, eps)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
