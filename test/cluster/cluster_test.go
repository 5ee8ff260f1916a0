package cluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/network"
)

// controlPlane returns the kube-controlplane binary, or skips the test.
func controlPlane(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SKIFF_CONTROLPLANE")
	if os.Getenv("SKIFF_E2E") != "1" || bin == "" {
		t.Skip("control plane test disabled: set SKIFF_E2E=1 and SKIFF_CONTROLPLANE=$(make controlplane); " +
			"etcd from test/setup.sh must be on PATH")
	}
	return bin
}

// TestControlPlane starts the control plane, has the controller manager
// make a Deployment's Pod, restarts the API server and finds the Pod again.
func TestControlPlane(t *testing.T) {
	bin := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Bin: bin, NodeNames: []string{"node-a"}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(began).Round(time.Millisecond))
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()

	createDeployment(ctx, t, c.Client())
	pod := waitForPod(ctx, t, c.Client())
	if pod.Spec.NodeName != "" || pod.Status.Phase != v1.PodPending {
		t.Errorf("pod %s: node %q, phase %q; want unscheduled and Pending (there is no node)",
			pod.Name, pod.Spec.NodeName, pod.Status.Phase)
	}
	checkNodeIdentity(ctx, t, c, "node-a")
	checkKubectl(t, bin, c.Kubeconfig("admin"))

	began = time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAPIServer took %v", time.Since(began).Round(time.Millisecond))
	if again := waitForPod(ctx, t, c.Client()); again.UID != pod.UID {
		t.Errorf("after the restart: pod %s (%s), want %s (%s)", again.Name, again.UID, pod.Name, pod.UID)
	}
}

func createDeployment(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"app": "smoke"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "x"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
}

// waitForPod waits for the one pod of the smoke Deployment.
func waitForPod(ctx context.Context, t *testing.T, cs kubernetes.Interface) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=smoke"})
		if err == nil && len(list.Items) == 1 {
			return &list.Items[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pod of the smoke deployment: %v (list error %v, list %v)", ctx.Err(), err, list)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkNodeIdentity checks that the node's kubeconfig authenticates as
// system:node:<name> in system:nodes.
func checkNodeIdentity(ctx context.Context, t *testing.T, c *Cluster, node string) {
	t.Helper()
	rc, err := c.RESTConfig(node)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review as %s: %v", node, err)
	}
	u := review.Status.UserInfo
	if want := "system:node:" + node; u.Username != want || !slices.Contains(u.Groups, "system:nodes") {
		t.Errorf("node kubeconfig authenticates as %q %v, want %q in system:nodes", u.Username, u.Groups, want)
	}
}

// checkKubectl runs the binary's kubectl against the cluster.
func checkKubectl(t *testing.T, bin, kubeconfig string) {
	t.Helper()
	out, err := exec.Command(bin, "kubectl", "--kubeconfig", kubeconfig, "get", "deployments", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "deployment.apps/smoke" {
		t.Errorf("kubectl get deployments: %v, output %q", err, out)
	}
}

// TestConfigAdvertiseAddress checks that only a non-loopback IPv4 address
// is taken.
func TestConfigAdvertiseAddress(t *testing.T) {
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"", true}, {"192.0.2.2", true}, {"127.0.0.1", false}, {"0.0.0.0", false},
		{"::1", false}, {"2001:db8::1", false}, {"node-a", false},
	} {
		cfg := Config{Dir: t.TempDir(), Bin: "kube-controlplane", AdvertiseAddress: tt.addr}
		if err := cfg.validate(); (err == nil) != tt.ok {
			t.Errorf("AdvertiseAddress %q: %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}

// TestAdvertiseAddress starts the control plane advertised on this host's
// first non-loopback IPv4 address: the kubernetes service's endpoint is
// that address, and the API server serves there with a certificate the
// cluster CA verifies for it.
func TestAdvertiseAddress(t *testing.T) {
	bin := controlPlane(t)
	addr := hostIPv4(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Bin: bin, Logf: t.Logf, AdvertiseAddress: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	var got []string
	for ctx.Err() == nil {
		ep, err := c.Client().CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		got = nil
		if err == nil {
			for _, s := range ep.Subsets {
				for _, a := range s.Addresses {
					got = append(got, a.IP)
				}
			}
		}
		if slices.Equal(got, []string{addr}) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(got, []string{addr}) {
		t.Fatalf("kubernetes endpoints %v, want [%s]", got, addr)
	}
	cfg, err := c.RESTConfig("admin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "https://" + net.JoinHostPort(addr, strconv.Itoa(c.port))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Errorf("the API server at %s: %v", cfg.Host, err)
	}
}

// hostIPv4 is the node's first non-loopback IPv4 address (the default
// route's interface, network.NodeIPs), or skips.
func hostIPv4(t *testing.T) string {
	t.Helper()
	ips, err := network.NodeIPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ips {
		if ip.To4() != nil && !ip.IsLoopback() {
			return ip.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host")
	return ""
}
